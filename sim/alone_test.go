package sim

import (
	"context"
	"go/parser"
	"go/token"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestImportsNothingOfOurs: sim is run alone (`infertop sim`) and by other
// tools, so it may import nothing of infertop's; a hook such as WithGuard
// carries what the caller wants done instead.
func TestImportsNothingOfOurs(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(path, "github.com/infertop/infertop") {
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
}

// TestErrorsNameNoFlag: the sim's errors say what is wrong in its own terms;
// the command line that took the value from a flag adds the flag's name.
func TestErrorsNameNoFlag(t *testing.T) {
	var errs []error
	for _, bad := range []string{"boom=0.1", "reset=2", "reset", "pause=-1s"} {
		_, err := ParseFaults(bad)
		errs = append(errs, err)
	}
	_, err := Preset("nope")
	errs = append(errs, err)
	for _, p := range []Params{{}, {Model: "m"}, {Model: "m", Slots: 1}, {Model: "m", Slots: 1, KVTokens: 1, MaxModelLen: 1, MaxBatchTokens: 1, Jitter: 2}} {
		errs = append(errs, p.Validate())
	}
	for _, err := range errs {
		if err == nil {
			t.Fatal("bad input accepted")
		}
		if strings.Contains(err.Error(), "--") {
			t.Errorf("%q names a flag", err)
		}
	}
}

// panicListener panics in Accept, inside the goroutine Serve starts for
// the HTTP accept loop.
type panicListener struct{ net.Listener }

func (panicListener) Accept() (net.Conn, error) { panic("accept") }

// TestServeGuard: the guard is deferred in each goroutine Serve starts,
// directly, so its recover() sees the goroutine's panic.
func TestServeGuard(t *testing.T) {
	s, err := New(testParams())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	recovered := make(chan any, 2)
	guard := func() {
		calls.Add(1)
		if r := recover(); r != nil {
			recovered <- r
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, panicListener{ln}, nil, WithGuard(guard)) }()
	select {
	case r := <-recovered:
		if r != "accept" {
			t.Fatalf("guard recovered %v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the accept loop's panic did not reach the guard")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("guard ran %d times, want 2 (the engine and the accept loop)", n)
	}
}
