package fleet

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
)

// secondsFake is an agent serving /seconds besides /state and /result:
// its seconds are the test's, served after since as the handler asks.
type secondsFake struct {
	*fake
	secs agent.Seconds
	raw  []byte // when set, /seconds answers this instead
}

func newSecondsFake(t *testing.T, st agent.State) *secondsFake {
	t.Helper()
	a := &secondsFake{fake: &fake{st: st, res: result(t, 4, 3, 0)}}
	h := agent.NewHandler([]byte(testToken), func() agent.State {
		a.mu.Lock()
		defer a.mu.Unlock()
		s := a.st
		s.Now = time.Now()
		return s
	}, func(_ context.Context, w io.Writer) (bool, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		_, err := w.Write(a.res)
		return false, err
	}, nil).WithSeconds(func(_ context.Context, since int64) (*agent.Seconds, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		out := a.secs
		out.Seconds = nil
		for _, s := range a.secs.Seconds {
			if s.Sec > since {
				out.Seconds = append(out.Seconds, s)
			}
		}
		return &out, nil
	})
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		raw := a.raw
		a.mu.Unlock()
		if r.URL.Path == "/seconds" && raw != nil { // as it is, past the handler
			_, _ = w.Write(raw)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

// encode is h in the run JSON's histogram form.
func encode(t testing.TB, h *hdr.Histogram) string {
	t.Helper()
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// recorded is what the test's agents recorded, by common second: every
// value of every metric, for the union's exact quantiles.
type recorded map[int64]map[load.Metric][]int64

// drawn is a histogram of random values, encoded, and its values.
type drawn struct {
	enc    string
	values []int64
}

// draws are a few random histograms of TTFTs and E2Es each, which the
// agents' seconds pick from (an encoding is slow under the race
// detector: a few, not one a second).
func draws(t testing.TB, rng *rand.Rand) map[load.Metric][]drawn {
	out := map[load.Metric][]drawn{}
	for m, scale := range map[load.Metric]float64{load.TTFT: 50_000, load.E2E: 900_000} {
		for range 6 {
			h := load.NewHistogram()
			var d drawn
			for range 5 + rng.IntN(20) {
				v := 1 + int64(scale*rng.ExpFloat64())
				if err := h.RecordValue(v); err != nil {
					t.Fatal(err)
				}
				d.values = append(d.values, v)
			}
			d.enc = encode(t, h)
			out[m] = append(out[m], d)
		}
	}
	return out
}

// seconds makes an agent's seconds from..to (its own), each with TTFTs
// and E2Es drawn at random from ds, kept in r at common second sec+off.
func (r recorded) seconds(rng *rand.Rand, ds map[load.Metric][]drawn, from, to, off int64) []agent.Second {
	var out []agent.Second
	for sec := from; sec <= to; sec++ {
		s := agent.Second{Sec: sec, Completed: 3 + rng.Int64N(5), OutputTokens: 40, InputTokens: 16, InFlight: 4, Hist: map[string]string{}}
		s.Good = s.Completed
		if r[sec+off] == nil {
			r[sec+off] = map[load.Metric][]int64{}
		}
		for m, d := range ds {
			pick := d[rng.IntN(len(d))]
			r[sec+off][m] = append(r[sec+off][m], pick.values...)
			s.Hist[report.MetricKey(m)] = pick.enc
		}
		out = append(out, s)
	}
	return out
}

// union is the histogram of every value of m recorded at common seconds
// from..to, and the values sorted.
func (r recorded) union(m load.Metric, from, to int64) (*hdr.Histogram, []int64) {
	h := load.NewHistogram()
	var all []int64
	for sec := from; sec <= to; sec++ {
		for _, v := range r[sec][m] {
			_ = h.RecordValue(v)
			all = append(all, v)
		}
	}
	slices.Sort(all)
	return h, all
}

// TestWindowMergesSeconds: three agents that started 0, 2 and 1 s after
// the common start send their seconds (TTFT and E2E histograms, random
// values, the oldest ones gone from their rings); the session's window is the
// exact merge of the last 10 common seconds (the window set): its latency figures are
// those of the histogram of the union of every value recorded in them
// (so within HDR's precision of the exact quantiles), its counts their
// sums, its series one point per common second with the second's own
// union's percentiles. A second waits for every live agent: while one
// lags a second behind (within the grace) the window ends where it is;
// one past the grace is not waited for.
func TestWindowMergesSeconds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ds := draws(t, rng)
	startAt := time.Now().Add(-50 * time.Second).Truncate(time.Second)
	rec := recorded{}
	offs := []int64{0, 2, 1}
	lasts := []int64{19, 17, 16} // agent 2 lags: its last is common 17
	const first = 9              // the oldest each keeps: common 9, 11 and 10
	var agents []*secondsFake
	var addrs []string
	for i, off := range offs {
		st := state(i, 3)
		st.StartAt = &startAt
		st.Started = startAt.Add(time.Duration(off)*time.Second + 30*time.Millisecond)
		a := newSecondsFake(t, st)
		a.secs = agent.Seconds{Encoding: report.HistogramEncoding, Started: st.Started.Add(time.Millisecond), Current: lasts[i] + 1,
			Seconds: rec.seconds(rng, ds, first, lasts[i], off)}
		agents, addrs = append(agents, a), append(addrs, a.addr())
	}
	f := follow(t, strings.Join(addrs, ","), func(c *Config) { c.LostAfter, c.ResultEvery = 5*time.Second, time.Hour }) // the results: once
	s := NewMerging(f, nil)
	defer s.Stop()
	const w = 10 * time.Second
	s.Controller().SetWindow(w) // the fakes take no control: the window is the follower's
	check := func(sn load.Snapshot, from, to int64) {
		t.Helper()
		if sn.Window != w || sn.Covered != time.Duration(to-from+1)*time.Second {
			t.Errorf("window %v, covered %v", sn.Window, sn.Covered)
		}
		for _, m := range []load.Metric{load.TTFT, load.E2E} {
			h, all := rec.union(m, from, to)
			want := load.DistOf(h)
			if got := sn.Latency[m]; got != want {
				t.Errorf("%v over common %d..%d: %+v, the union's %+v", m, from, to, got, want)
			}
			exact := all[max(int(0.99*float64(len(all))+0.5), 1)-1] // HdrHistogram's rank of the 99th
			if d := float64(sn.Latency[m].P99-time.Duration(exact)*time.Microsecond) / float64(time.Duration(exact)*time.Microsecond); d < -0.002 || d > 0.002 {
				t.Errorf("%v p99 %v, exact %dµs", m, sn.Latency[m].P99, exact)
			}
		}
		var done int64
		for _, a := range agents {
			for _, sec := range a.secs.Seconds {
				if c := sec.Sec + offs[a.st.Index]; c >= from && c <= to {
					done += sec.Completed
				}
			}
		}
		if sn.Completed != done || sn.ReqPerSec != float64(done)/float64(to-from+1) {
			t.Errorf("completed %d at %g/s, want %d", sn.Completed, sn.ReqPerSec, done)
		}
		n := len(sn.Series)
		if n != int(to-first)+1 {
			t.Fatalf("%d points to common %d", n, to)
		}
		for i, p := range sn.Series {
			c := first + int64(i)
			if p.Sec != sn.Series[0].Sec+int64(i) {
				t.Fatalf("point %d is second %d, the first %d", i, p.Sec, sn.Series[0].Sec)
			}
			h, _ := rec.union(load.TTFT, c, c)
			q := h.ValueAtPercentilesSlice([]float64{50, 99})
			if p.TTFTP50 != time.Duration(q[0])*time.Microsecond || p.TTFTP99 != time.Duration(q[1])*time.Microsecond {
				t.Fatalf("common second %d: TTFT p50 %v p99 %v, the union's %dµs %dµs", c, p.TTFTP50, p.TTFTP99, q[0], q[1])
			}
		}
	}
	// Every agent in: as many TTFTs as the union's (the agents are found
	// one by one).
	in := func(from, to int64) func(load.Snapshot) bool {
		h, _ := rec.union(load.TTFT, from, to)
		return func(sn load.Snapshot) bool {
			return len(sn.Series) == int(to-first)+1 && sn.Latency[load.TTFT].Count == h.TotalCount()
		}
	}
	sn := waitSnap(t, s, "the window to common 17", in(8, 17))
	check(sn, 8, 17)
	// The lagging agent catches up: the window moves to the newest.
	agents[2].mu.Lock()
	agents[2].secs.Seconds = append(agents[2].secs.Seconds, rec.seconds(rng, ds, 17, 18, 1)...)
	agents[2].secs.Current = 19
	agents[2].mu.Unlock()
	sn = waitSnap(t, s, "the window to common 19", in(10, 19))
	check(sn, 10, 19)
	// Agents 0 and 1 go on; agent 2, silent past the grace, is not waited for.
	for i, a := range agents[:2] {
		a.mu.Lock()
		a.secs.Seconds = append(a.secs.Seconds, rec.seconds(rng, ds, 20-offs[i], 23-offs[i], offs[i])...)
		a.secs.Current = 24 - offs[i]
		a.mu.Unlock()
	}
	sn = waitSnap(t, s, "the window to common 23", in(14, 23))
	check(sn, 14, 23)
}

// secondsBodies are /seconds answers: a good one of three seconds
// (body of a no-op), body to spoil a copy of it, and ones spoiled each
// in one way no agent sends.
func secondsBodies(t testing.TB) (body func(func(*agent.Seconds)) []byte, bad map[string][]byte) {
	rng := rand.New(rand.NewPCG(3, 4))
	wide := hdr.New(1, 3_600_000_000, 2) // another geometry
	_ = wide.RecordValue(5)
	good, err := json.Marshal(agent.Seconds{Encoding: report.HistogramEncoding, Started: time.Now(), Current: 3,
		Seconds: recorded{}.seconds(rng, draws(t, rng), 0, 2, 0)})
	if err != nil {
		t.Fatal(err)
	}
	body = func(mod func(*agent.Seconds)) []byte {
		var s agent.Seconds // a copy of the good one's
		if err := json.Unmarshal(good, &s); err != nil {
			t.Fatal(err)
		}
		mod(&s)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return body, map[string][]byte{
		"malformed":    []byte(`{"encoding": [`),
		"encoding":     body(func(s *agent.Seconds) { s.Encoding = "raw" }),
		"too many":     body(func(s *agent.Seconds) { s.Seconds = make([]agent.Second, load.MaxSealedSeconds+1) }),
		"out of order": body(func(s *agent.Seconds) { s.Seconds[1], s.Seconds[2] = s.Seconds[2], s.Seconds[1] }),
		"current":      body(func(s *agent.Seconds) { s.Current = 2 }),
		"negative":     body(func(s *agent.Seconds) { s.Seconds[0].Completed = -1 }),
		"huge":         body(func(s *agent.Seconds) { s.Seconds[0].InputTokens = 1 << 40 }),
		"class": body(func(s *agent.Seconds) {
			s.Seconds[0].Failed, s.Seconds[0].FailedByClass = 1, map[string]int64{"oops": 1}
		}),
		"by class":        body(func(s *agent.Seconds) { s.Seconds[0].Failed = 2 }),
		"metric":          body(func(s *agent.Seconds) { s.Seconds[0].Hist["nope"] = s.Seconds[0].Hist["ttft"] }),
		"histogram":       body(func(s *agent.Seconds) { s.Seconds[0].Hist["ttft"] = "AAAA" }),
		"geometry":        body(func(s *agent.Seconds) { s.Seconds[0].Hist["ttft"] = encode(t, wide) }),
		"not after since": body(func(s *agent.Seconds) { s.Seconds[0].Sec = -1 }),
	}
}

// TestSecondsRefused: a /seconds answer past its bound, malformed, or
// with seconds, counts or histograms no agent sends is refused whole,
// said in the agent's row, and the window stays the run's; a good one
// after it is taken.
func TestSecondsRefused(t *testing.T) {
	body, bad := secondsBodies(t)
	floors := bucketFloors()
	for name, b := range bad {
		if _, err := decodeSeconds(b, -1, floors); err == nil {
			t.Errorf("%s: taken", name)
		}
	}
	if _, err := decodeSeconds(body(func(*agent.Seconds) {}), -1, floors); err != nil {
		t.Fatalf("the good one: %v", err)
	}
	// Over HTTP: past the bound, then malformed, then good.
	st := state(0, 1)
	st.Started = time.Now()
	a := newSecondsFake(t, st)
	a.raw = []byte(`{"encoding": "` + strings.Repeat("A", agent.MaxSecondsBytes) + `"}`)
	f := follow(t, a.addr(), func(c *Config) { c.LostAfter = 5 * time.Second })
	s := NewMerging(f, nil)
	defer s.Stop()
	waitView(t, f, "the huge answer refused", func(v View) bool {
		return len(v.Agents) == 1 && strings.Contains(v.Agents[0].SecondsErr, "past")
	})
	a.mu.Lock()
	a.raw = bad["geometry"]
	a.mu.Unlock()
	waitView(t, f, "the other geometry refused", func(v View) bool {
		return len(v.Agents) == 1 && strings.Contains(v.Agents[0].SecondsErr, "digits") && len(v.Agents[0].Seconds) == 0
	})
	if sn := s.Latest(); len(sn.Series) != 0 {
		t.Fatalf("a window from refused seconds: %d points", len(sn.Series))
	}
	// The good answer through the handler, which serves the seconds
	// after since: served raw, the next poll (since 2) would be refused
	// for its old seconds, and a view after it could be the one seen.
	var goodSecs agent.Seconds
	if err := json.Unmarshal(body(func(*agent.Seconds) {}), &goodSecs); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	a.raw, a.secs = nil, goodSecs
	a.mu.Unlock()
	v := waitView(t, f, "the good answer taken", func(v View) bool { return len(v.Agents) == 1 && len(v.Agents[0].Seconds) == 3 })
	if v.Agents[0].SecondsErr != "" {
		t.Fatalf("still refused: %s", v.Agents[0].SecondsErr)
	}
	waitSnap(t, s, "the window from the good seconds", func(sn load.Snapshot) bool { return len(sn.Series) == 3 })
}

// TestBucketFloors: a decoded histogram's buckets read through the
// floors are its Distribution's non-empty bars, from the lowest value to
// the highest.
func TestBucketFloors(t *testing.T) {
	floors := bucketFloors()
	rng := rand.New(rand.NewPCG(5, 6))
	h := load.NewHistogram()
	for _, v := range []int64{1, 2, 2047, 2048, 2049, 1_000_000, h.HighestTrackableValue()} {
		_ = h.RecordValue(v)
	}
	for range 2000 {
		_ = h.RecordValue(1 + int64(1e6*rng.ExpFloat64()))
	}
	var want []int64
	for _, b := range h.Distribution() {
		if b.Count > 0 {
			want = append(want, b.From, b.Count)
		}
	}
	var got []int64
	for i, n := range h.Export().Counts {
		if n > 0 {
			got = append(got, floors[i], n)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%d buckets through the floors, %d bars", len(got)/2, len(want)/2)
	}
}
