package fleet

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/discover"
)

// FuzzDecodeState: whatever an agent answers at /state (or to a
// control), decodeState never panics and refuses in one line; a state
// it takes has every count within 0..maxStateCount and every age finite
// within maxStateMS, so that the follower's sums over 10,000 agents hold,
// and the roster judges it without a panic. The seeds are states as
// agents send them and hostile ones; plain go test runs only them.
func FuzzDecodeState(f *testing.F) {
	st := state(1, 2)
	st.Now = time.Unix(1e9, 0).UTC()
	good, err := json.Marshal(st)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(good),
		`{}`,
		`{"index":7,"of":2}`,
		`{"sent":-1}`,
		`{"completed":9223372036854775807}`,
		`{"control_seq":18446744073709551615,"of":1}`,
		`{"rate":1e308,"ttft_p99_ms":-1e308}`,
		`{"streams":{"waiting":-5,"oldest_waiting_ms":1e300}}`,
		`{"started":"0001-01-01T00:00:00Z","now":"9999-12-31T23:59:59Z"}`,
		`[1,2,3]`,
		`{"version":"` + strings.Repeat("\x1b[2J", 100) + `"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		st, err := decodeState(body)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("refused in more than a line: %v", err)
			}
			return
		}
		s := st.Streams
		for _, n := range []int64{st.Sent, st.Completed, st.Failed, st.Incomplete, st.InFlight, st.Scheduled, int64(st.Backlog),
			int64(s.Waiting), int64(s.Generating), int64(s.Stalled)} {
			if n < 0 || n > maxStateCount {
				t.Fatalf("taken with a count of %d", n)
			}
		}
		for _, v := range []float64{st.Rate, st.TTFTP99MS, s.OldestWaitingMS, s.OldestGeneratingMS, s.LongestStallMS} {
			if math.IsNaN(v) || math.Abs(v) > maxStateMS {
				t.Fatalf("taken with a figure of %g", v)
			}
		}
		// The roster takes it: refused or followed, no panic, a reason
		// in one line.
		r := newRoster(Config{Version: "test", LostAfter: time.Second, PollEvery: time.Second, Logf: func(string, ...any) {}}, time.Unix(1e9, 0))
		r.found(resolution{addrs: []discover.Addr{{HostPort: "10.0.0.1:7070"}}}, time.Unix(1e9, 0))
		r.observe(observation{addr: "10.0.0.1:7070", at: time.Unix(1e9, 0), state: &st}, time.Unix(1e9, 0))
		v := r.step(time.Unix(1e9+1, 0))
		for _, a := range v.Agents {
			if strings.Contains(a.Why, "\n") || strings.Contains(a.Why, "\x1b") {
				t.Fatalf("a reason shown raw: %q", a.Why)
			}
		}
		if len(v.Missing) > max(v.Of, 0) {
			t.Fatalf("%d missing of %d", len(v.Missing), v.Of)
		}
	})
}
