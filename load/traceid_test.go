package load

import "testing"

// TestTraceOf: a seed's trace ids repeat, and differ from request to
// request and from another seed's.
func TestTraceOf(t *testing.T) {
	seen := map[string]bool{}
	for n := range uint64(1000) {
		a, b := traceOf(7, n), traceOf(7, n)
		if a != b {
			t.Fatalf("request %d: %s then %s", n, a.ID(), b.ID())
		}
		if seen[a.ID()] {
			t.Fatalf("request %d: trace id %s again", n, a.ID())
		}
		seen[a.ID()] = true
		if other := traceOf(8, n); seen[other.ID()] || other.SpanID == a.SpanID {
			t.Fatalf("seed 8's request %d shares seed 7's ids", n)
		}
	}
}
