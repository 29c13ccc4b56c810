package htmlreport

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/sanitize"
)

// Bounds on what one page draws, whatever the file holds: a crafted file
// of many phases or classes draws these many and says so.
const (
	maxClassLines = 8  // failure classes on the requests chart, a run
	maxDistPhases = 12 // phases on a percentile plot, a run
	maxMarks      = 64 // phase rules on a time chart
)

func nan() float64 { return math.NaN() }

// percentile lines of a time chart: p99 drawn first and widest, p50 last
// and thinnest, so where a second's few requests make them one value all
// three still show, nested.
var timeQuantiles = []struct {
	key    string
	color  int
	weight int
}{{"p99", 2, 2}, {"p95", 4, 1}, {"p50", 0, 0}}

func (pg *page) build() {
	names := []string{}
	for _, r := range pg.Runs {
		names = append(names, sanitize.Text(r.Name))
	}
	pg.Title = "infertop: " + strings.Join(names, " vs ")
	two := len(pg.Runs) == 2
	label := func(r pageRun, s string) string {
		if two {
			return sanitize.Text(r.Name) + " " + s
		}
		return s
	}

	overTime := func(id, title, unit string) *chart {
		return &chart{ID: id, Title: title, YUnit: unit, XUnit: "run time, s"}
	}
	lat := section{ID: "latency", Title: "Latency over time"}
	ttft, e2e := overTime("ttft-time", "TTFT per second", "ms"), overTime("e2e-time", "E2E latency per second", "ms")
	thr := section{ID: "throughput", Title: "Throughput, errors and in flight"}
	tok, req, infl := overTime("tokens-time", "Tokens per second", "tok/s"),
		overTime("requests-time", "Requests per second: completed and failed by class", "req/s"),
		overTime("inflight-time", "Requests in flight (the most seen each second)", "requests")
	dist := section{ID: "distribution", Title: "Latency distribution per phase (percentile plot, as HdrHistogram's plotter)"}
	dttft := &chart{ID: "ttft-dist", Title: "TTFT by percentile", YUnit: "ms", XUnit: "percentile", PercentileX: true}
	de2e := &chart{ID: "e2e-dist", Title: "E2E latency by percentile", YUnit: "ms", XUnit: "percentile", PercentileX: true}
	srv := section{ID: "server", Title: "The server's own view (its /metrics)"}
	queue, kv, gen := overTime("server-queue", "Requests running and waiting on the server", "requests"), overTime("server-kv", "KV cache in use", "%"),
		overTime("server-tokens", "Tokens generated per second, as the server counts them", "tok/s")
	pow := section{ID: "power", Title: "GPU power and energy per token"}
	pw, util, jpt := overTime("power-time", "GPU power (all GPUs)", "W"), overTime("gpu-util", "GPU utilisation", "%"),
		overTime("jpt-time", "Energy per output token", "J/token")
	timed := []*chart{ttft, e2e, tok, req, infl}

	for _, r := range pg.Runs {
		inf := &r.res.Infertop
		dash := r.Index == 1
		if r.Index == 0 && (two || len(inf.Phases) > 1) {
			for i, p := range inf.Phases {
				if i == maxMarks {
					break
				}
				m := mark{X: p.StartS, Label: fmt.Sprintf("P%d", p.ID)}
				for _, c := range timed {
					c.Marks = append(c.Marks, m)
				}
			}
		}
		if s := inf.Series; s != nil {
			x := make([]float64, len(s.Sec))
			for i, v := range s.Sec {
				x[i] = float64(v)
			}
			for _, q := range timeQuantiles {
				ttft.Lines = append(ttft.Lines, line{Name: label(r, "TTFT "+q.key), X: x, Y: column(s.Latency["ttft_"+q.key], len(x)), Color: q.color, Weight: q.weight, Dash: dash})
				e2e.Lines = append(e2e.Lines, line{Name: label(r, "E2E "+q.key), X: x, Y: column(s.Latency["e2el_"+q.key], len(x)), Color: q.color, Weight: q.weight, Dash: dash})
			}
			tok.Lines = append(tok.Lines, line{Name: label(r, "output tok/s"), X: x, Y: ints(s.OutputTokens, len(x)), Color: 0, Dash: dash},
				line{Name: label(r, "input tok/s"), X: x, Y: ints(s.InputTokens, len(x)), Color: 3, Dash: dash})
			req.Lines = append(req.Lines, line{Name: label(r, "completed"), X: x, Y: ints(s.Completed, len(x)), Color: 1, Dash: dash})
			classes := sortedKeys(s.FailedByClass)
			if len(classes) == 0 {
				req.Lines = append(req.Lines, line{Name: label(r, "failed"), X: x, Y: ints(s.Failed, len(x)), Color: 2, Dash: dash})
			}
			for j, k := range classes {
				if j == maxClassLines {
					req.Note = fmt.Sprintf("%d failure classes more not drawn", len(classes)-j)
					break
				}
				req.Lines = append(req.Lines, line{Name: label(r, "failed "+sanitize.Text(k)), X: x, Y: ints(s.FailedByClass[k], len(x)), Color: 2 + j, Dash: dash})
			}
			infl.Lines = append(infl.Lines, line{Name: label(r, "in flight"), X: x, Y: ints(s.InFlight, len(x)), Color: 4, Dash: dash})
		}
		if t := inf.Telemetry; t != nil {
			n := len(t.T)
			add := func(c *chart, name string, col []*float64, color int, scale float64) {
				if col == nil {
					return
				}
				y := column(col, n)
				for i := range y {
					y[i] *= scale
				}
				c.Lines = append(c.Lines, line{Name: label(r, name), X: t.T, Y: y, Color: color, Dash: dash})
			}
			add(queue, "running", t.Running, 1, 1)
			add(queue, "waiting", t.Waiting, 2, 1)
			add(kv, "KV cache", t.KVUsage, 3, 100)
			add(gen, "generated tok/s", t.GenTokPerSec, 0, 1)
			add(pw, "power", t.PowerW, 5, 1)
			add(util, "utilisation", t.GPUUtilPct, 6, 1)
			if t.PowerW != nil && inf.Series != nil {
				jpt.Lines = append(jpt.Lines, line{Name: label(r, "J per output token"), X: t.T, Y: joulesPerToken(t, inf.Series), Color: 6, Dash: dash})
			}
		}
		if h := inf.Histograms; h != nil {
			drawn := 0
			for _, ph := range h.Phases {
				if ph.Warmup {
					continue
				}
				if drawn == maxDistPhases {
					dttft.Note = fmt.Sprintf("the first %d phases drawn of each run", maxDistPhases)
					de2e.Note = dttft.Note
					break
				}
				name := label(r, fmt.Sprintf("phase %d", ph.ID))
				for _, c := range []struct {
					ch  *chart
					key string
				}{{dttft, "ttft"}, {de2e, "e2el"}} {
					if enc, ok := ph.Hist[c.key]; ok {
						if x, y := percentileCurve(enc); len(x) > 0 {
							c.ch.Lines = append(c.ch.Lines, line{Name: name, X: x, Y: y, Color: drawn, Dash: dash})
						}
					}
				}
				drawn++
			}
		}
	}
	pg.buildKinds()
	pg.buildTurns()
	lat.Charts = []*chart{ttft, e2e}
	thr.Charts = []*chart{tok, req, infl}
	dist.Charts = []*chart{dttft, de2e}
	srv.Charts = []*chart{queue, kv, gen}
	pow.Charts = []*chart{pw, util, jpt}
	for _, s := range []section{lat, thr, dist, srv, pow} {
		var keep []*chart
		for _, c := range s.Charts {
			if len(c.Lines) > 0 {
				keep = append(keep, c)
			}
		}
		if len(keep) > 0 {
			s.Charts = keep
			pg.Sections = append(pg.Sections, s)
		}
	}
}

// column is a column of the JSON as n values, NaN where null (or short).
func column(c []*float64, n int) []float64 {
	y := make([]float64, n)
	for i := range y {
		y[i] = nan()
		if i < len(c) && c[i] != nil {
			y[i] = *c[i]
		}
	}
	return y
}

// ints is a count column as n values, 0 where short.
func ints(c []int32, n int) []float64 {
	y := make([]float64, n)
	for i := range y {
		if i < len(c) {
			y[i] = float64(c[i])
		}
	}
	return y
}

// joulesPerToken is each reading's power over its second's output
// tokens.
func joulesPerToken(t *report.TelemetryJSON, s *report.SeriesJSON) []float64 {
	byS := make(map[int64]float64, len(s.Sec))
	for i, sec := range s.Sec {
		if i < len(s.OutputTokens) {
			byS[sec] = float64(s.OutputTokens[i])
		}
	}
	py := column(t.PowerW, len(t.T))
	jy := make([]float64, len(t.T))
	for i, tt := range t.T {
		jy[i] = nan()
		if f := math.Floor(tt); f >= math.MinInt64 && f <= math.MaxInt64 {
			if n := byS[int64(f)]; n > 0 && !math.IsNaN(py[i]) {
				jy[i] = py[i] / n
			}
		}
	}
	return jy
}

// percentileCurve samples a histogram as HdrHistogram's plotter draws it:
// x is log10(1/(1-q)) (0 is the median's left, 2 is p99, 3 p99.9), y the
// value at q in ms; the curve stops at the last value the count can tell
// apart (1/count from the top), then the maximum. A histogram that cannot
// be read (or whose geometry is not one infertop writes) draws nothing.
func percentileCurve(enc string) (xs, ys []float64) {
	h, err := report.DecodeHistogram(enc)
	if err != nil || h.TotalCount() <= 0 {
		return nil, nil
	}
	top := math.Min(math.Log10(float64(h.TotalCount())), percentileMaxNines)
	const n = 160
	for i := 0; i <= n; i++ {
		x := top * float64(i) / n
		q := 100 * (1 - math.Pow(10, -x))
		xs, ys = append(xs, x), append(ys, float64(h.ValueAtPercentile(q))/1000)
	}
	xs, ys = append(xs, top), append(ys, float64(h.Max())/1000)
	return xs, ys
}

// sortedLoads orders a search's steps by load (the curve's x).
func sortedLoads(steps []report.StepJSON) []report.StepJSON {
	out := append([]report.StepJSON(nil), steps...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Load < out[j].Load })
	return out
}
