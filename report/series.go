package report

import (
	"math"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/telemetry"
)

// HistogramEncoding names the form of the histograms in the JSON, so a
// reader knows what to decode them with.
const HistogramEncoding = "HdrHistogram V2 compressed, base64; values in microseconds"

// SeriesJSON is the run's per-second record in columns (one array per
// figure, index i is second Sec[i]): a column of numbers is a third the
// size of the same figures as objects, and charts read columns. A
// percentile is null in a second where no request finished.
type SeriesJSON struct {
	Sec           []int64               `json:"sec"`
	Completed     []int32               `json:"completed"`
	Failed        []int32               `json:"failed"`
	FailedByClass map[string][]int32    `json:"failed_by_class"`
	OutputTokens  []int32               `json:"output_tokens"`
	InputTokens   []int32               `json:"input_tokens"`
	InFlight      []int32               `json:"in_flight"`
	Latency       map[string][]*float64 `json:"latency_ms"`
	// Dropped counts the oldest seconds left out (a run past a day).
	Dropped int64 `json:"dropped_s,omitempty"`
}

// seriesJSON lays the seconds out in columns; a class with no failure in
// the whole run has no column.
func seriesJSON(h *load.History) SeriesJSON {
	n := len(h.Seconds)
	out := SeriesJSON{Sec: make([]int64, n), Completed: make([]int32, n), Failed: make([]int32, n), FailedByClass: map[string][]int32{},
		OutputTokens: make([]int32, n), InputTokens: make([]int32, n), InFlight: make([]int32, n), Latency: map[string][]*float64{}, Dropped: h.Dropped}
	lat := map[string]func(load.Second) uint32{
		"ttft_p50": func(s load.Second) uint32 { return s.TTFT[0] }, "ttft_p95": func(s load.Second) uint32 { return s.TTFT[1] },
		"ttft_p99": func(s load.Second) uint32 { return s.TTFT[2] }, "e2el_p50": func(s load.Second) uint32 { return s.E2E[0] },
		"e2el_p95": func(s load.Second) uint32 { return s.E2E[1] }, "e2el_p99": func(s load.Second) uint32 { return s.E2E[2] },
	}
	for k := range lat {
		out.Latency[k] = make([]*float64, n)
	}
	// The open loop's TTFT* and E2E*, from the intended send time: their
	// columns only when some second has them (a closed loop has none).
	for _, s := range h.Seconds {
		if s.TTFTIntended[2] > 0 || s.E2EIntended[2] > 0 {
			for i, q := range []string{"p50", "p95", "p99"} {
				lat["ttft_intended_"+q] = func(s load.Second) uint32 { return s.TTFTIntended[i] }
				lat["e2el_intended_"+q] = func(s load.Second) uint32 { return s.E2EIntended[i] }
				out.Latency["ttft_intended_"+q], out.Latency["e2el_intended_"+q] = make([]*float64, n), make([]*float64, n)
			}
			break
		}
	}
	for i, s := range h.Seconds {
		out.Sec[i], out.Completed[i], out.Failed[i] = s.Sec, s.Completed, s.Failed
		out.OutputTokens[i], out.InputTokens[i], out.InFlight[i] = s.OutTokens, s.InTokens, s.InFlight
		for _, cl := range probe.FailureClasses() {
			if s.ByClass[cl] == 0 {
				continue
			}
			col := out.FailedByClass[cl.String()]
			if col == nil {
				col = make([]int32, n)
				out.FailedByClass[cl.String()] = col
			}
			col[i] = s.ByClass[cl]
		}
		for k, pick := range lat {
			if v := pick(s); v > 0 {
				ms := float64(v) / 1000 // µs: exact in three decimals
				out.Latency[k][i] = &ms
			}
		}
	}
	return out
}

// HistogramsJSON are the latency histograms of the run and of each phase,
// by metric key (ttft, e2el, ...), in HistogramEncoding.
type HistogramsJSON struct {
	Encoding string                `json:"encoding"`
	Run      map[string]string     `json:"run"`
	Phases   []PhaseHistogramsJSON `json:"phases"`
}

// PhaseHistogramsJSON is one phase's histograms.
type PhaseHistogramsJSON struct {
	ID     int               `json:"id"`
	Warmup bool              `json:"warmup"`
	Hist   map[string]string `json:"hist"`
}

func histMap(ph load.PhaseHistograms) map[string]string {
	out := map[string]string{}
	for _, m := range allMetrics {
		if b := ph.Hist[m.m]; b != nil {
			out[m.key] = string(b)
		}
	}
	return out
}

// histogramsJSON keeps the phases the report lists (those with requests).
func histogramsJSON(h *load.History, phases []load.Phase) HistogramsJSON {
	out := HistogramsJSON{Encoding: HistogramEncoding, Run: histMap(h.Run), Phases: []PhaseHistogramsJSON{}}
	sent := map[int]bool{}
	for _, p := range phases {
		sent[p.ID] = p.Sent() > 0
	}
	for _, ph := range h.Phases {
		if sent[ph.ID] {
			out.Phases = append(out.Phases, PhaseHistogramsJSON{ID: ph.ID, Warmup: ph.Warmup, Hist: histMap(ph)})
		}
	}
	return out
}

// TelemetryJSON is the server's and the GPUs' readings over the run, in
// columns like SeriesJSON: T is the run time of each reading in seconds; a
// figure is null where it was not read.
type TelemetryJSON struct {
	T            []float64  `json:"t_s"`
	Running      []*float64 `json:"running,omitempty"`
	Waiting      []*float64 `json:"waiting,omitempty"`
	KVUsage      []*float64 `json:"kv_usage,omitempty"`
	GenTokPerSec []*float64 `json:"generated_tok_per_s,omitempty"`
	PowerW       []*float64 `json:"gpu_power_w,omitempty"`
	GPUUtilPct   []*float64 `json:"gpu_util_pct,omitempty"`
}

// telemetryJSON keeps the readings between start and end; nil without any.
func telemetryJSON(rs []telemetry.Reading, start, end time.Time) *TelemetryJSON {
	var in []telemetry.Reading
	for _, r := range rs {
		if !r.At.Before(start.Truncate(time.Second)) && !r.At.After(end) {
			in = append(in, r)
		}
	}
	if len(in) == 0 {
		return nil
	}
	var out TelemetryJSON
	var hasServer, hasKV, hasGPU bool
	for _, r := range in {
		hasServer, hasKV, hasGPU = hasServer || r.HasServer, hasKV || r.HasKV, hasGPU || r.HasGPU
	}
	num := func(v float64, ok bool) *float64 {
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		v = math.Round(v*1000) / 1000
		return &v
	}
	var prev *telemetry.Reading
	for i := range in {
		r := &in[i]
		out.T = append(out.T, math.Round(r.At.Sub(start).Seconds()*1000)/1000)
		if hasServer {
			out.Running = append(out.Running, num(r.Running, r.HasServer))
			out.Waiting = append(out.Waiting, num(r.Waiting, r.HasServer))
			var rate *float64
			if r.HasServer && prev != nil {
				if dt := r.At.Sub(prev.At).Seconds(); dt > 0 && r.GenTokens >= prev.GenTokens {
					rate = num((r.GenTokens-prev.GenTokens)/dt, true)
				}
			}
			out.GenTokPerSec = append(out.GenTokPerSec, rate)
			if r.HasServer {
				prev = r
			}
		}
		if hasKV {
			out.KVUsage = append(out.KVUsage, num(r.KVUsage, r.HasKV))
		}
		if hasGPU {
			out.PowerW = append(out.PowerW, num(r.PowerW, r.HasGPU))
			out.GPUUtilPct = append(out.GPUUtilPct, num(r.UtilPct, r.HasGPU))
		}
	}
	return &out
}

// addHistory adds the whole run's record to the JSON's infertop object:
// what the HTML report draws.
func (r *Report) addHistory(inf *InfertopJSON) {
	if h := r.History; h != nil {
		s, hs := seriesJSON(h), histogramsJSON(h, r.Final.Phases)
		inf.Series, inf.Histograms = &s, &hs
	}
	inf.Telemetry = telemetryJSON(r.Readings, r.Manifest.Start, r.Manifest.End)
}
