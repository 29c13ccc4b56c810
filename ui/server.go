package ui

import (
	"fmt"
	"math"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/telemetry"
)

// serverPanel is the server's and the GPUs' side, two lines under a title,
// and where the window's TTFT went by the server's own timings; or
// nothing when none is known (an unknown server shows nothing rather than
// wrong figures).
func (m *Model) serverPanel(w int) string {
	v := m.fig.Server
	split := append(m.splitLine(w), m.perfLine(w)...)
	if v.Server == nil && v.GPU == nil && split == nil {
		return ""
	}
	t := m.theme
	// Everything a server or an exporter sent (errors that quote a page, a
	// GPU's label, a kind) passes sanitize.Text before it is drawn: a
	// metrics page is endpoint text like any other.
	clean := sanitize.Text
	sep := t.Muted.Render(" · ")
	item := func(label, value string) string { return t.Muted.Render(label+" ") + t.Value.Render(value) }
	var lines []string
	// The server's percentiles come from its histogram buckets: unlike the
	// client's exact figures beside them, all a bucket says is a range, so
	// a wide one is shown as its bound (≤ 5s) and only a narrow one as a
	// point (≈); the title says why.
	note := "its own metrics; latencies as their histogram buckets"
	if v.Server == nil && v.GPU == nil {
		note = "its own timings of each request" // the split alone
	}
	lines = append(lines, m.title("Server", note, w))
	if s := v.Server; s != nil {
		var parts []string
		switch {
		case s.Kind == "":
			parts = append(parts, t.Warn.Render("server metrics unreadable: "+clean(s.Err)))
		default:
			parts = append(parts, t.Text.Render(kindName(s.Kind)), item("running", fmt.Sprintf("%.0f", s.Running)), item("waiting", fmt.Sprintf("%.0f", s.Waiting)))
			if s.HasKV {
				parts = append(parts, item("KV", pct(s.KVUsage)))
			}
			if s.HasPrefix {
				parts = append(parts, item("prefix cache hits", pct(s.PrefixHitRate)))
			}
			parts = append(parts, item("gen", num(s.GenPerSec)+" tok/s"), item("prefill", num(s.PromptTokPerSec)+" tok/s"))
			if s.HasPreempt {
				parts = append(parts, item("preempted", fmt.Sprintf("%.0f", s.Preemptions)))
			}
			q := func(label string, p50, p99 float64, b [2]telemetry.Bucket) string {
				a, c := bucketed(p50, b[0]), bucketed(p99, b[1])
				return t.Muted.Render(label+" p50 "+a[0]) + t.P50.Render(a[1]) + t.Muted.Render(" p99 "+c[0]) + t.P99.Render(c[1])
			}
			if s.HasTTFT {
				parts = append(parts, q("server TTFT", s.TTFTP50, s.TTFTP99, s.TTFTBuckets))
			}
			if s.HasITL {
				parts = append(parts, q("ITL", s.ITLP50, s.ITLP99, s.ITLBuckets))
			}
			if s.Stale {
				parts = append(parts, t.Warn.Render(fmt.Sprintf("stale %s: %s", clock(s.Age), clean(s.Err))))
			}
		}
		lines = append(lines, flowLine(parts, sep, w)...)
	}
	lines = append(lines, split...)
	if g := v.GPU; g != nil {
		var parts []string
		if g.Count == 0 {
			parts = append(parts, t.Warn.Render(clean(g.Source)+" unreadable: "+clean(g.Err)))
		} else {
			parts = append(parts, t.Text.Render(fmt.Sprintf("GPU ×%d (%s)", g.Count, clean(g.Source))), item("now", watts(g.PowerW)), item("avg", watts(g.AvgW)))
			if jpt, ok := m.fig.Window.JoulesPerToken, m.fig.Window.HasEnergy; ok {
				parts = append(parts, t.Value.Render(rateNum(jpt, 3)+" J/token")+t.Muted.Render(" "+rateNum(1/jpt, 3)+" tok/J"))
			}
			parts = append(parts, item("util", fmt.Sprintf("%.0f%%", g.UtilPct)), t.Value.Render(fmt.Sprintf("%.0f°C", g.TempC)), t.Muted.Render("energy from "+clean(g.EnergyFrom)))
			if g.Stale {
				parts = append(parts, t.Warn.Render(fmt.Sprintf("stale %s: %s", clock(g.Age), clean(g.Err))))
			}
		}
		lines = append(lines, flowLine(parts, sep, w)...)
		if g.Count > 1 && g.Count <= 16 { // each GPU, on a line of its own
			var each []string
			for _, x := range g.GPUs {
				each = append(each, t.Muted.Render("GPU"+clean(x.Index)+" ")+t.Text.Render(watts(x.PowerW))+t.Muted.Render(fmt.Sprintf(" %.0f%%", x.UtilPct)))
			}
			lines = append(lines, flowLine(each, sep, w)...)
		}
	}
	return block(lines, w, len(lines))
}

// splitLine is where the window's TTFT went, by the server's own timings
// of its requests (--server-timings): each part's p50 and p99 (the
// connection, the server's queue and prefill, the rest, and the client's
// TTFT less the server's), over as many lines of w cells as it needs;
// nil when no request in the window was timed by its server.
func (m *Model) splitLine(w int) []string {
	sp := &m.snap.TTFTSplit
	n := sp[load.SplitGap].Count
	if n == 0 {
		return nil
	}
	t := m.theme
	items := []string{t.Text.Render("where TTFT went") + t.Muted.Render(" p50 / p99 of "+count(n, 7)+" timed")}
	for _, p := range []struct {
		label string
		part  int
	}{{"connection", load.SplitConnection}, {"queue", load.SplitQueue}, {"prefill", load.SplitPrefill}, {"rest", load.SplitRest}, {"gap", load.SplitGap}} {
		d := sp[p.part]
		items = append(items, t.Muted.Render(p.label+" ")+t.P50.Render(Duration(d.P50))+t.Muted.Render(" / ")+t.P99.Render(Duration(d.P99)))
	}
	return flowLine(items, t.Muted.Render(" · "), w)
}

// flowLine lays a line's items out over as many lines of w cells as they
// need, each item whole: a server line is read item by item, and one cut
// at the edge ("p99 2…") says nothing.
func flowLine(items []string, sep string, w int) []string {
	parts := make([]part, len(items))
	for i, s := range items {
		parts[i] = part{s, 0}
	}
	return flow(parts, sep, w)
}

// kindName is the server's kind as shown: its name when telemetry knows
// it, else the kind itself, sanitised (it came from a metrics page).
func kindName(kind string) string {
	if n := telemetry.KindName(kind); n != "" {
		return n
	}
	return sanitize.Text(kind)
}

func watts(w float64) string {
	if w >= 1000 {
		return fmt.Sprintf("%.2f kW", w/1000)
	}
	return fmt.Sprintf("%.0f W", w)
}

// bucketed is a server quantile as its histogram knows it: a point (≈)
// inside a narrow bucket, else the bucket's upper bound (≤), or its lower
// one past the last finite bound (>). An interpolated point inside
// vLLM's wide buckets read 4.97 s as the p99 of TTFTs whose largest was
// 2.83 s at the client. It returns the relation and the value apart,
// styled apart.
func bucketed(est float64, b telemetry.Bucket) [2]string {
	switch {
	case b.Narrow() || (b == telemetry.Bucket{}):
		return [2]string{"≈", Duration(secs(est))}
	case math.IsInf(b.Hi, 1):
		return [2]string{"> ", Duration(secs(b.Lo))}
	}
	return [2]string{"≤ ", Duration(secs(b.Hi))}
}

// perfLine is the server's own timings of the window's requests from its
// /perf_metrics (TensorRT-LLM, --server-timings): each span's p50 and p99
// over the entries read in the window, its prefix cache's share of KV
// blocks reused and its draft tokens accepted, labelled as the server's
// (unjoined where none of its entries joined one of infertop's
// requests); before it, where some did, where their TTFT went. Nil when
// it is not read, or not offered.
func (m *Model) perfLine(w int) []string {
	p := m.fig.Server.Perf
	if p == nil {
		return nil
	}
	t := m.theme
	var lines []string
	if p.Joined > 0 { // where the joined requests' TTFT went, as splitLine says the answers' own timings
		items := []string{t.Text.Render("where TTFT went") + t.Muted.Render(" p50 / p99 of "+count(int64(p.Joined), 7)+" joined by the server's ids")}
		for i, label := range []string{"connection", "queue", "prefill", "rest", "gap"} {
			d := p.Split[i]
			items = append(items, t.Muted.Render(label+" ")+t.P50.Render(Duration(d.P50))+t.Muted.Render(" / ")+t.P99.Render(Duration(d.P99)))
		}
		lines = flowLine(items, t.Muted.Render(" · "), w)
	}
	label := "server's own (/perf_metrics)"
	if p.Joined == 0 {
		label = "server's own (/perf_metrics, unjoined)"
	}
	items := []string{t.Text.Render(label) + t.Muted.Render(" p50 / p99 of "+count(int64(p.Entries), 7))}
	for i, label := range []string{"queue", "prefill", "TTFT", "gen"} {
		if d := p.Parts[i]; d.N > 0 {
			items = append(items, t.Muted.Render(label+" ")+t.P50.Render(Duration(d.P50))+t.Muted.Render(" / ")+t.P99.Render(Duration(d.P99)))
		}
	}
	if rate, ok := p.BlockHitRate(); ok {
		items = append(items, t.Muted.Render("KV blocks reused ")+t.Value.Render(pct(rate)))
	}
	if p.SpecDrafted > 0 {
		items = append(items, t.Muted.Render("drafts accepted ")+t.Value.Render(pct(float64(p.SpecAccepted)/float64(p.SpecDrafted))))
	}
	if p.Stale {
		items = append(items, t.Warn.Render(fmt.Sprintf("stale %s: %s", clock(p.Age), sanitize.Text(p.Err))))
	}
	return append(lines, flowLine(items, t.Muted.Render(" · "), w)...)
}
