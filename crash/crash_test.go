package crash

import (
	"go/build"
	"runtime"
	"strings"
	"testing"
)

func TestWithoutHandlerThePanicGoesOn(t *testing.T) {
	var got any
	func() {
		defer func() { got = recover() }()
		func() {
			defer Recover()
			panic("boom")
		}()
	}()
	if got != "boom" || Crashing() {
		t.Fatalf("recovered %v, crashing %v: Recover swallowed a panic with no handler", got, Crashing())
	}
}

func TestHandlerGetsThePanicAndItsStack(t *testing.T) {
	type report struct {
		v     any
		stack string
	}
	got := make(chan report, 1)
	Handle(func(v any, stack []byte) {
		got <- report{v, string(stack)}
		runtime.Goexit() // a real handler exits the process
	})
	defer Handle(nil)
	go func() {
		defer Recover()
		panicsHere()
	}()
	r := <-got
	if r.v != "in a goroutine" || !strings.Contains(r.stack, "panicsHere") || !Crashing() {
		t.Fatalf("value %v, crashing %v, stack:\n%s", r.v, Crashing(), r.stack)
	}
}

func panicsHere() { panic("in a goroutine") }

// TestImportsOnlyTheStandardLibrary: every goroutine of the engine defers
// Recover, so whatever crash imports the engine links; the terminal guard
// lives in termguard for that reason.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	pkg, err := build.Default.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
			t.Errorf("crash imports %s: it must stay stdlib-only", imp)
		}
	}
}
