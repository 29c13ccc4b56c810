package fleet

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
)

// sideView is a view of n running agents whose seconds 0..secs-1 hold
// perSec requests each, their TTFTs around ms (microsecond buckets), the
// agents' load started at start (on this machine's clock: no offset).
func sideView(rng *rand.Rand, n, secs, perSec int, ms float64, start time.Time) View {
	v := View{Started: start}
	for i := range n {
		a := Agent{Addr: "a", Status: report.AgentRunning, HasState: true, SecondsStart: start,
			State: agent.State{Index: i, Of: n, Started: start}}
		for sec := range int64(secs) {
			s := Second{Sec: sec, Completed: int64(perSec)}
			for range perSec {
				us := int64(ms * 1000 * (1 + 0.1*rng.NormFloat64()))
				s.hist[load.TTFT].values = append(s.hist[load.TTFT].values, us)
				s.hist[load.TTFT].counts = append(s.hist[load.TTFT].counts, 1)
			}
			a.Seconds = append(a.Seconds, s)
		}
		v.Agents = append(v.Agents, a)
	}
	return v
}

// TestBinnedSeconds: the comparison over the agents' merged seconds
// calls a canary twice as slow worse and an alike one no different;
// it counts the seconds from since on, up to the newest both sides'
// agents have sent, the canaries' placed on the baselines' clock.
func TestBinnedSeconds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	stats := []compare.Stat{mustStat(t, "ttft_p50")}
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	o := compare.Options{Seed: 1, Resamples: 300}
	vb := sideView(rng, 2, 40, 10, 20, t0)
	for _, tt := range []struct {
		slow  float64
		worse bool
	}{{1, false}, {2, true}} {
		vc := sideView(rng, 2, 40, 10, 20*tt.slow, t0)
		c := binned(stats, vb, vc, time.Time{}, 40, nil).Compare(o)
		r := c.Results[0]
		if (r.Verdict == compare.Worse) != tt.worse || r.NBaseline != 800 || r.NCanary != 800 || r.Seconds != 40 {
			t.Errorf("slow %g: %+v", tt.slow, r)
		}
	}
	// A fleet's rate (four agents at 100 a second): a full side spans
	// the 40 seconds asked for, not the newest 4,096 requests' 10, and
	// is judged.
	fast, slowC := sideView(rng, 4, 40, 100, 20, t0), sideView(rng, 4, 40, 100, 40, t0)
	if r := binned(stats, fast, slowC, time.Time{}, 40, nil).Compare(o).Results[0]; r.Verdict != compare.Worse || r.Seconds != 40 {
		t.Errorf("at a fleet's rate: %+v", r)
	}
	// With the confidence sequences every second counts, none thinned.
	if r := binned(stats, fast, slowC, time.Time{}, 40, &cumState{c: compare.NewCumulative(), upTo: math.MinInt64}).Compare(compare.Options{Anytime: true}).Results[0]; r.Verdict != compare.Worse || r.NBaseline != 4*40*100 {
		t.Errorf("anytime, at a fleet's rate: %+v", r)
	}
	// From since: the seconds that start at it or later.
	vc := sideView(rng, 2, 40, 10, 20, t0)
	r := binned(stats, vb, vc, t0.Add(9500*time.Millisecond), 40, nil).Compare(o).Results[0]
	if r.NBaseline != 600 || r.NCanary != 600 {
		t.Errorf("from 9.5 s: %d and %d samples, want 600 each", r.NBaseline, r.NCanary)
	}
	// The canaries' load began a second later: their second k is the
	// baselines' k+1, and only the seconds both have are compared, to
	// the older frontier (one canary agent is a second behind).
	late := sideView(rng, 2, 30, 10, 20, t0.Add(time.Second))
	late.Agents[1].Seconds = late.Agents[1].Seconds[:len(late.Agents[1].Seconds)-1]
	r = binned(stats, vb, late, time.Time{}, 40, nil).Compare(o).Results[0]
	// To common second 29 (the canary agent behind sent its 28th, the
	// baselines' 29th), from 1 (the canaries' first): 29 seconds of 20.
	if r.NBaseline != 29*20 || r.NCanary != 29*20 || r.Seconds != 29 {
		t.Errorf("a later canary: %d and %d samples over %d s", r.NBaseline, r.NCanary, r.Seconds)
	}
	if got := binned(stats, vb, View{Started: t0}, time.Time{}, 40, nil).Compare(o).Results[0]; got.NBaseline != 0 || got.Verdict != compare.NotEnough {
		t.Errorf("no canary seconds: %+v", got)
	}
}

func mustStat(t *testing.T, name string) compare.Stat {
	t.Helper()
	s, err := compare.ParseStat(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPhaseSeen: a phase the agents begin on their own (a walk's next
// stage) starts the comparison over from when the follower saw it; the
// first phase seen is the run's own, and a lost agent's word is none.
func TestPhaseSeen(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	p := &Pair{base: &Merging{f: &Fleet{cfg: Config{Now: func() time.Time { return now }}}}}
	view := func(phases ...int) View {
		var v View
		for i, ph := range phases {
			status := report.AgentRunning
			if i == 2 {
				status = report.AgentLost
			}
			v.Agents = append(v.Agents, Agent{Status: status, HasState: true, State: agent.State{Phase: ph}})
		}
		return v
	}
	if at := p.phaseSeen(view(1, 1)); !at.IsZero() {
		t.Errorf("the first phase: %v", at)
	}
	now = now.Add(5 * time.Second)
	if at := p.phaseSeen(view(1, 1, 7)); !at.IsZero() {
		t.Errorf("a lost agent's phase counted: %v", at)
	}
	if at := p.phaseSeen(view(1, 2)); !at.Equal(now) {
		t.Errorf("a new phase at %v, want %v", at, now)
	}
	later := now
	now = now.Add(5 * time.Second)
	if at := p.phaseSeen(view(2, 2)); !at.Equal(later) {
		t.Errorf("the same phase again: %v, want %v", at, later)
	}
}

// TestPairControlMirrors: the pair's controller moves the baselines'
// controls and gives the canaries' merge the same window, named phases
// and reset, sending nothing on the canaries' fleet.
func TestPairControlMirrors(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	newSession := func() *Merging {
		return &Merging{f: &Fleet{cfg: Config{Now: clock}, wake: make(chan struct{})}, known: make(chan struct{})}
	}
	p := &Pair{base: newSession(), canary: newSession()}
	p.base.ctl.known, p.base.ctl.knobs, p.base.ctl.of = true, load.Knobs{Concurrency: 8, PromptTokens: 16, OutputTokens: 8}, 2
	ctl := p.Controller()
	ctl.SetWindow(time.Minute)
	ctl.Update(func(k *load.Knobs) { k.Concurrency = 12 })
	now = now.Add(time.Second)
	ctl.Reset()
	c := p.canary.ctl
	if c.window != time.Minute || len(c.named) != 2 || c.named[0].knobs.Concurrency != 12 || !c.resetAt.Equal(now) || c.knobs.Concurrency != 12 {
		t.Errorf("the canaries' record: window %v, named %+v, reset at %v, knobs %+v", c.window, c.named, c.resetAt, c.knobs)
	}
	if p.canary.window() != time.Minute || p.canary.f.out.c.Seq != 0 || p.base.f.out.c.Seq == 0 {
		t.Errorf("the canaries' window %v; controls sent: canaries %d, baselines %d", p.canary.window(), p.canary.f.out.c.Seq, p.base.f.out.c.Seq)
	}
}

// TestBinnedCumulative: the confidence sequences count every second of
// the setting across looks, the seconds the merges' windows have let go
// included, each once.
func TestBinnedCumulative(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	stats := []compare.Stat{mustStat(t, "ttft_p50")}
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	full := [2]View{sideView(rng, 2, 60, 10, 20, t0), sideView(rng, 2, 60, 10, 20, t0)}
	window := func(v View, from, to int) View {
		w := v
		w.Agents = slices.Clone(v.Agents)
		for i := range w.Agents {
			w.Agents[i].Seconds = v.Agents[i].Seconds[from:to]
		}
		return w
	}
	cum := &cumState{c: compare.NewCumulative(), upTo: math.MinInt64}
	look := func(from, to int) compare.Result {
		b := binned(stats, window(full[0], from, to), window(full[1], from, to), time.Time{}, 40, cum)
		return b.Compare(compare.Options{Anytime: true}).Results[0]
	}
	for _, tt := range []struct{ from, to, want int }{
		{0, 40, 2 * 40 * 10},
		{20, 60, 2 * 60 * 10}, // the window slid past seconds 0-19: still counted
		{20, 60, 2 * 60 * 10}, // a look again adds nothing
	} {
		if r := look(tt.from, tt.to); r.NBaseline != tt.want || r.NCanary != tt.want || r.Seconds != tt.to {
			t.Errorf("seconds %d-%d: %d/%d requests over %d s, want %d a side", tt.from, tt.to-1, r.NBaseline, r.NCanary, r.Seconds, tt.want)
		}
	}
}
