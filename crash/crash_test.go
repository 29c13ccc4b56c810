package crash

import (
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
