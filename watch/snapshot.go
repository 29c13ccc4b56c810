package watch

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/infertop/infertop/engines"
)

// Snapshot is the fleet at one read: its groups over the window, every
// server, and the verdict over the whole watch. Its JSON is the watch's
// result (--json) and /verdict's answer's body.
type Snapshot struct {
	At      time.Time `json:"at"`
	Elapsed float64   `json:"elapsed_s"`
	// Source names what was read, without secrets; SourceErr is why its
	// last read failed ("" when it did not).
	Source    string `json:"source"`
	SourceErr string `json:"source_error,omitempty"`
	// Window is the span of the groups' and servers' rates, in seconds.
	Window float64 `json:"window_s"`
	// Groups are the baseline, then the canary, then any other group.
	Groups  []Group    `json:"groups"`
	Servers []ServerOf `json:"servers"`
	Verdict Verdict    `json:"verdict"`
	// Mismatched counts histogram increments left out of a group's
	// totals: a server whose buckets differ from its group's.
	Mismatched int `json:"mismatched_histograms,omitempty"`
	// Probe is the end-to-end probe's view (Config.Probe), nil without.
	Probe *Probe `json:"probe,omitempty"`
}

// Bound is where a quantile lies: the histogram bucket (Lo, Hi], in
// seconds, never a point interpolated inside it. Edge says it lies in
// the first bucket (Lo is 0) or past the last finite bound (Hi is
// +Inf, encoded as null).
type Bound struct {
	Lo   float64  `json:"lo_s"`
	Hi   *float64 `json:"hi_s"`
	OK   bool     `json:"known"`
	Edge bool     `json:"edge,omitempty"`
}

// Upper is Hi, +Inf when unbounded.
func (b Bound) Upper() float64 {
	if b.Hi == nil {
		return math.Inf(1)
	}
	return *b.Hi
}

// boundOf is the q-quantile's bucket of h.
func boundOf(h *engines.Histogram, q float64) Bound {
	if h == nil {
		return Bound{}
	}
	lo, hi, ok := h.Quantile(q)
	if !ok {
		return Bound{}
	}
	b := Bound{Lo: lo, OK: true, Edge: lo == 0 || math.IsInf(hi, 1)}
	if !math.IsInf(hi, 1) {
		b.Hi = &hi
	}
	return b
}

// Latency is one server histogram's p50 and p99 bounds.
type Latency struct {
	P50 Bound `json:"p50"`
	P99 Bound `json:"p99"`
}

func latencyOf(h *engines.Histogram) Latency {
	return Latency{P50: boundOf(h, 0.5), P99: boundOf(h, 0.99)}
}

// Group is one revision's servers over the window.
type Group struct {
	Name string `json:"name"`
	// Role is "baseline", "canary" or "".
	Role string `json:"role,omitempty"`
	// Servers are those listed; Up those answering now.
	Servers  int `json:"servers"`
	Up       int `json:"up"`
	Restarts int `json:"restarts"`
	// Rates per second over the window.
	ReqPerSec    float64 `json:"requests_per_s"`
	InTokPerSec  float64 `json:"input_tokens_per_s"`
	OutTokPerSec float64 `json:"output_tokens_per_s"`
	// ErrorRate is failed over ended, over the window; Known false when
	// nothing ended.
	ErrorRate    float64 `json:"error_rate"`
	ErrorKnown   bool    `json:"error_rate_known"`
	Preemptions  float64 `json:"preemptions_per_s"`
	PrefixHit    float64 `json:"prefix_cache_hit_rate"`
	PrefixKnown  bool    `json:"prefix_cache_known"`
	Running      float64 `json:"running"`
	Waiting      float64 `json:"waiting"`
	KVUsage      float64 `json:"kv_usage"`
	KVKnown      bool    `json:"kv_known"`
	TTFT         Latency `json:"ttft"`
	ITL          Latency `json:"itl"`
	E2E          Latency `json:"e2e"`
	Queue        Latency `json:"queue"`
	TotalEnded   float64 `json:"ended_total"`
	TotalFailed  float64 `json:"failed_total"`
	windowSum    engines.Reading
	windowSecond float64
}

// ServerOf is one server's line of the table.
type ServerOf struct {
	Name     string  `json:"name"`
	Group    string  `json:"group"`
	Engine   string  `json:"engine,omitempty"`
	State    string  `json:"state"`
	Err      string  `json:"error,omitempty"`
	Restarts int     `json:"restarts"`
	Failures int     `json:"failed_reads"`
	ReqPer   float64 `json:"requests_per_s"`
	TTFTP99  Bound   `json:"ttft_p99"`
	KVUsage  float64 `json:"kv_usage"`
	KVKnown  bool    `json:"kv_known"`
	Running  float64 `json:"running"`
	Waiting  float64 `json:"waiting"`
}

// snapshot is the fleet at now.
func (f *fleetState) snapshot(now time.Time, elapsed time.Duration, source string) Snapshot {
	f.elapsed = elapsed
	s := Snapshot{At: now, Elapsed: elapsed.Seconds(), Source: source, SourceErr: f.sourceErr,
		Window: f.cfg.Window.Seconds(), Mismatched: f.mismatched}
	groups := map[string]*Group{}
	keys := make([]string, 0, len(f.servers))
	for k := range f.servers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		sv := f.servers[k]
		g := groups[sv.t.Group]
		if g == nil {
			g = &Group{Name: sv.t.Group}
			groups[sv.t.Group] = g
		}
		var sum engines.Reading
		for _, t := range sv.ticks {
			add(&sum, t.d)
		}
		span := f.span(sv, now)
		row := ServerOf{Name: sv.t.Name, Group: sv.t.Group, Engine: sv.engine, State: sv.state, Err: sv.err,
			Restarts: sv.restarts, Failures: sv.failures, TTFTP99: boundOf(sum.TTFT, 0.99)}
		if span > 0 {
			row.ReqPer = total(sum) / span
		}
		live := sv.state != StateGone && sv.state != StateDown && sv.state != StateUnknown && sv.state != StateImplausible && sv.has
		if live {
			row.Running, row.Waiting = sv.last.Running.V, sv.last.Waiting.V
			row.KVUsage, row.KVKnown = sv.last.KVUsage.V, sv.last.KVUsage.Has
			g.Up++
			g.Running += row.Running
			g.Waiting += row.Waiting
			if row.KVKnown {
				g.KVUsage = max(g.KVUsage, row.KVUsage)
				g.KVKnown = true
			}
		}
		if sv.state != StateGone {
			g.Servers++
		}
		g.Restarts += sv.restarts
		g.windowSecond = max(g.windowSecond, span)
		s.Mismatched += add(&g.windowSum, sum)
		s.Servers = append(s.Servers, row)
	}
	base, canary := f.roles(groups)
	for _, name := range groupOrder(groups, base, canary) {
		g := groups[name]
		switch name {
		case base:
			g.Role = "baseline"
		case canary:
			g.Role = "canary"
		}
		g.fill(f.totals[name])
		s.Groups = append(s.Groups, *g)
	}
	s.Verdict = f.judge(base, canary, groups)
	return s
}

// span is the seconds a server's window covers: from its oldest
// increment's start to now.
func (f *fleetState) span(sv *server, now time.Time) float64 {
	if len(sv.ticks) == 0 {
		return 0
	}
	from := now.Add(-f.cfg.Window)
	first := sv.ticks[0].from.Add(-f.cfg.Every)
	if first.After(from) {
		from = first
	}
	return now.Sub(from).Seconds()
}

// fill computes a group's window figures from its sums.
func (g *Group) fill(totals *engines.Reading) {
	w, secs := g.windowSum, g.windowSecond
	if secs > 0 {
		g.ReqPerSec = total(w) / secs
		g.InTokPerSec = w.PromptTokens.V / secs
		g.OutTokPerSec = w.GenTokens.V / secs
		g.Preemptions = w.Preemptions.V / secs
	}
	if n := total(w); n > 0 {
		g.ErrorRate, g.ErrorKnown = failed(w)/n, true
	}
	if w.CachedPromptTokens.Has && w.PromptTokens.V > 0 {
		g.PrefixHit, g.PrefixKnown = w.CachedPromptTokens.V/w.PromptTokens.V, true
	}
	g.TTFT, g.ITL, g.E2E, g.Queue = latencyOf(w.TTFT), latencyOf(w.ITL), latencyOf(w.E2E), latencyOf(w.Queue)
	if totals != nil {
		g.TotalEnded, g.TotalFailed = total(*totals), failed(*totals)
	}
}

// roles are the baseline's and the canary's group names: the
// configured ones, or with two groups the one whose name says so, else
// the smaller the canary.
func (f *fleetState) roles(groups map[string]*Group) (base, canary string) {
	base, canary = f.cfg.Baseline, f.cfg.Canary
	var names []string
	for n := range groups {
		names = append(names, n)
	}
	sort.Strings(names)
	switch {
	case base != "" && canary != "":
		return base, canary
	case canary != "":
		for _, n := range names {
			if n != canary {
				return n, canary
			}
		}
		return "", canary
	case base != "":
		for _, n := range names {
			if n != base {
				return base, n
			}
		}
		return base, ""
	}
	if len(names) != 2 {
		return "", ""
	}
	a, b := names[0], names[1]
	// A name that says its role decides (canary and stable of equal size
	// went by the alphabet, and the canary was judged as the baseline);
	// else the smaller group is the canary, a tie by name.
	switch {
	case roleOf(a) == roleCanary && roleOf(b) != roleCanary, roleOf(b) == roleBaseline && roleOf(a) != roleBaseline:
		return b, a
	case roleOf(b) == roleCanary && roleOf(a) != roleCanary, roleOf(a) == roleBaseline && roleOf(b) != roleBaseline:
		return a, b
	case groups[b].Servers > groups[a].Servers:
		return b, a
	}
	return a, b
}

// The roles a group's name can say.
const (
	roleNone = iota
	roleBaseline
	roleCanary
)

// roleOf is the role a group's name says, as rollouts name them: canary,
// preview, new or next for the canary; stable, baseline, primary, prod or
// old for the baseline (a hash says none).
func roleOf(name string) int {
	n := strings.ToLower(name)
	for _, w := range []string{"canary", "preview", "new", "next"} {
		if strings.Contains(n, w) {
			return roleCanary
		}
	}
	for _, w := range []string{"stable", "baseline", "primary", "prod", "old"} {
		if strings.Contains(n, w) {
			return roleBaseline
		}
	}
	return roleNone
}

// groupOrder is the baseline, the canary, then the rest by name.
func groupOrder(groups map[string]*Group, base, canary string) []string {
	var out, rest []string
	for _, n := range []string{base, canary} {
		if _, ok := groups[n]; ok && n != "" {
			out = append(out, n)
		}
	}
	for n := range groups {
		if n != base && n != canary {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}
