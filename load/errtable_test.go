package load

import (
	"fmt"
	"testing"
	"time"

	"github.com/infertop/infertop/probe"
)

func TestErrorsByFrequency(t *testing.T) {
	t0 := time.Now()
	a := newAggregator(t0, 10*time.Second)
	ph := &phaseInfo{id: 1}
	fail := func(class probe.ErrorClass, status int, msg string, n int) {
		for range n {
			a.add(finished(t0, probe.Result{Start: t0, Class: class, Status: status, Err: msg}, ph), time.Second)
		}
	}
	fail(probe.HTTP5xx, 503, "HTTP 503: overloaded", 3)
	fail(probe.HTTP429, 429, "HTTP 429: slow down", 5)
	fail(probe.Connection, 0, "connection refused", 1)
	fail(probe.HTTP5xx, 500, "HTTP 500: boom", 3)
	a.add(finished(t0, okResult(t0, time.Millisecond, 2*time.Millisecond, 2), ph), time.Second)
	warm := &phaseInfo{id: 1, warmup: true} // kept out, as from the totals
	a.add(finished(t0, probe.Result{Start: t0, Class: probe.Timeout, Err: "timeout"}, warm), time.Second)

	s := a.snapshot(1500*time.Millisecond, ph, 0)
	want := []ErrorCount{
		{probe.HTTP429, 429, "HTTP 429: slow down", 5},
		{probe.HTTP5xx, 500, "HTTP 500: boom", 3}, // ties by class, then status
		{probe.HTTP5xx, 503, "HTTP 503: overloaded", 3},
		{probe.Connection, 0, "connection refused", 1},
	}
	if fmt.Sprint(s.Errors) != fmt.Sprint(want) {
		t.Fatalf("errors %+v, want %+v", s.Errors, want)
	}
	s.Errors[0].Count = 99 // the snapshot's own copy
	if s = a.snapshot(1600*time.Millisecond, ph, 0); s.Errors[0].Count != 5 {
		t.Fatalf("a snapshot's slice is shared: %+v", s.Errors)
	}

	// Past the bound, new messages count as their class's other ones.
	for i := range maxErrorKeys {
		fail(probe.HTTP4xx, 400, fmt.Sprintf("HTTP 400: bad request %d", i), 1)
	}
	fail(probe.HTTP5xx, 500, "HTTP 500: boom", 1) // a known one still counts as itself
	s = a.snapshot(1700*time.Millisecond, ph, 0)
	var sum int64
	others := map[probe.ErrorClass]int64{}
	for _, e := range s.Errors {
		sum += e.Count
		if e.Message == OtherErrors {
			others[e.Class] = e.Count
		}
	}
	if len(s.Errors) != maxErrorKeys+1 || sum != s.TotalFailed || others[probe.HTTP4xx] != 4 || s.Errors[1].Count != 4 {
		t.Fatalf("%d entries summing to %d of %d failures, others %v; first %+v", len(s.Errors), sum, s.TotalFailed, others, s.Errors[:3])
	}

	a.reset(2*time.Second, 1)
	if s = a.snapshot(2500*time.Millisecond, &phaseInfo{id: 2, gen: 1}, 0); s.Errors != nil {
		t.Fatalf("after a reset: %+v", s.Errors)
	}
}

// TestErrorCountLine: the status is added only where the message does not
// already begin with it, and the endpoint's text is made safe.
func TestErrorCountLine(t *testing.T) {
	for _, c := range []struct {
		e    ErrorCount
		want string
	}{
		{ErrorCount{Class: probe.HTTP5xx, Status: 503, Message: "HTTP 503: overloaded"}, "5xx: HTTP 503: overloaded"},
		{ErrorCount{Class: probe.HTTP4xx, Status: 404, Message: "no such model"}, "4xx (HTTP 404): no such model"},
		{ErrorCount{Class: probe.HTTP429, Status: 429}, "429 (HTTP 429)"},
		{ErrorCount{Class: probe.Malformed, Status: 200, Message: "bad JSON"}, "malformed: bad JSON"},
		{ErrorCount{Class: probe.Connection, Message: "refused"}, "connection: refused"},
		{ErrorCount{Class: probe.StreamCut, Message: "cut \x1b[2Jhere"}, `stream_cut: cut \x1b[2Jhere`},
	} {
		if got := c.e.Line(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.e, got, c.want)
		}
	}
}
