package probe

import "testing"

// TestRetries: a request's retries are every attempt written past the
// first, and at least one when the client retried it (its retry may have
// failed before it was written).
func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		r    Result
		want int64
	}{
		{Result{Written: 1}, 0},
		{Result{Written: 0}, 0},
		{Result{Written: 2, Retried: true}, 1},
		{Result{Written: 1, Retried: true}, 1},
		{Result{Written: 3, Retried: true}, 2},
		{Result{Written: 3}, 2},
	} {
		if got := tc.r.Retries(); got != tc.want {
			t.Errorf("%+v: %d retries, want %d", tc.r, got, tc.want)
		}
	}
}
