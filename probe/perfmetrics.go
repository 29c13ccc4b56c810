package probe

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fastjson"

	"github.com/infertop/infertop/readlimit"
)

// PerfMetricsPath is TensorRT-LLM's endpoint of per-request performance
// metrics (trtllm-serve with return_perf_metrics and
// perf_metrics_max_requests > 0 in its LLM API options): a JSON list of
// the requests finished since the last read, drained as it is read.
const PerfMetricsPath = "/perf_metrics"

// The bounds of one read of /perf_metrics: its bytes, the JSON values in
// them (counted before any is built), and the entries taken of the list
// (the rest counted in PerfRead.Past). TensorRT-LLM's entry is about
// 700 bytes and 25 values; its list holds perf_metrics_max_requests, read
// once a second. The values bound the heap: about 55 MiB at most.
const (
	MaxPerfMetricsBytes  = 8 << 20
	MaxPerfMetricsValues = 1 << 17
	MaxPerfEntries       = 4096
)

// ServerPerf is one request's performance as TensorRT-LLM's
// /perf_metrics gives it, its times turned into spans (each with its
// Has; a span whose ends are missing or out of order is left unknown):
// Queue from the engine's arrival to its first scheduling, Prefill from
// there to the first token, TTFT their sum (arrival to first token),
// Generation from the first token to the last. The KV cache's blocks
// reused and missed are its prefix cache's hits and misses, in blocks;
// SpecAccepted of SpecDrafted are speculative decoding's draft tokens.
type ServerPerf struct {
	// RequestID is the server's own number for the request (HasID false
	// without one): recent TensorRT-LLM versions name a streamed answer
	// chatcmpl-<it> (see PerfRequestID), which joins the two.
	RequestID                                    uint64
	HasID                                        bool
	Queue, Prefill, TTFT, Generation             time.Duration
	HasQueue, HasPrefill, HasTTFT, HasGeneration bool
	ReusedBlocks, MissedBlocks                   int64
	HasBlocks                                    bool
	SpecAccepted, SpecDrafted                    int64
	HasSpec                                      bool
}

// any reports whether the entry gave any figure.
func (p *ServerPerf) any() bool {
	return p.HasQueue || p.HasPrefill || p.HasTTFT || p.HasGeneration || p.HasBlocks || p.HasSpec
}

// PerfRead is what one read of /perf_metrics held: the entries taken,
// those refused (not an object, or no figure in bounds), and those past
// MaxPerfEntries, not read.
type PerfRead struct {
	Entries       []ServerPerf
	Refused, Past int
}

// ErrNotPerfList is a /perf_metrics answer that is no JSON list.
var ErrNotPerfList = errors.New("not a JSON list of perf metrics")

// ReadPerfMetrics reads one /perf_metrics answer, bounded (its bytes,
// its values, its entries: see MaxPerfMetricsBytes). Every number is
// checked: a time must be finite, positive (TensorRT-LLM writes 0 for a
// time not recorded) and below 1e10 s, a span between two of them at
// most an hour, a count a whole number below 2^40; past that the figure
// is unknown, and an entry with none is refused. A body past a bound, or
// no JSON list, is an error.
func ReadPerfMetrics(r io.Reader) (PerfRead, error) {
	b, err := io.ReadAll(readlimit.Reader(r, MaxPerfMetricsBytes))
	if err != nil {
		return PerfRead{}, fmt.Errorf("perf metrics: %w (%d bytes)", err, MaxPerfMetricsBytes)
	}
	if readlimit.JSONValues(b, MaxPerfMetricsValues) > MaxPerfMetricsValues {
		return PerfRead{}, fmt.Errorf("perf metrics: more than %d JSON values", MaxPerfMetricsValues)
	}
	var p fastjson.Parser
	v, err := p.ParseBytes(b)
	if err != nil || v.Type() != fastjson.TypeArray {
		return PerfRead{}, fmt.Errorf("perf metrics: %w", ErrNotPerfList)
	}
	list, _ := v.Array()
	var out PerfRead
	if n := len(list); n > MaxPerfEntries {
		out.Past, list = n-MaxPerfEntries, list[:MaxPerfEntries]
	}
	out.Entries = make([]ServerPerf, 0, len(list))
	for _, e := range list {
		if sp, ok := perfEntry(e); ok {
			out.Entries = append(out.Entries, sp)
		} else {
			out.Refused++
		}
	}
	return out, nil
}

// maxPerfTime bounds a time of /perf_metrics, in seconds of the server's
// steady clock (its origin is the server's: only spans mean anything).
const maxPerfTime = 1e10

// perfEntry reads one entry of the list: {"request_id", "perf_metrics":
// {"timing_metrics", "kv_cache_metrics", "speculative_decoding"}, ...}.
func perfEntry(e *fastjson.Value) (sp ServerPerf, ok bool) {
	m := e.Get("perf_metrics")
	if e.Type() != fastjson.TypeObject || m == nil || m.Type() != fastjson.TypeObject {
		return sp, false
	}
	if t := m.Get("timing_metrics"); t != nil && t.Type() == fastjson.TypeObject {
		at := func(key string) (float64, bool) {
			x := t.Get(key)
			if x == nil || x.Type() != fastjson.TypeNumber {
				return 0, false
			}
			f := x.GetFloat64()
			return f, f > 0 && f < maxPerfTime // NaN fails both
		}
		span := func(from, to string, d *time.Duration, has *bool) {
			a, okA := at(from)
			b, okB := at(to)
			if s := b - a; okA && okB && s >= 0 && s <= maxServerTime.Seconds() {
				*d, *has = time.Duration(s*float64(time.Second)), true
			}
		}
		span("arrival_time", "first_scheduled_time", &sp.Queue, &sp.HasQueue)
		span("first_scheduled_time", "first_token_time", &sp.Prefill, &sp.HasPrefill)
		span("arrival_time", "first_token_time", &sp.TTFT, &sp.HasTTFT)
		span("first_token_time", "last_token_time", &sp.Generation, &sp.HasGeneration)
	}
	count := func(x *fastjson.Value) (int64, bool) {
		if x == nil || x.Type() != fastjson.TypeNumber {
			return 0, false
		}
		f := x.GetFloat64()
		return int64(f), f >= 0 && f < 1<<40 && f == math.Trunc(f)
	}
	if id, ok := count(e.Get("request_id")); ok {
		sp.RequestID, sp.HasID = uint64(id), true
	}
	if kv := m.Get("kv_cache_metrics"); kv != nil && kv.Type() == fastjson.TypeObject {
		reused, okR := count(kv.Get("num_reused_blocks"))
		missed, okM := count(kv.Get("num_missed_blocks"))
		if okR && okM {
			sp.ReusedBlocks, sp.MissedBlocks, sp.HasBlocks = reused, missed, true
		}
	}
	if sd := m.Get("speculative_decoding"); sd != nil && sd.Type() == fastjson.TypeObject {
		acc, okA := count(sd.Get("total_accepted_draft_tokens"))
		drafted, okD := count(sd.Get("total_draft_tokens"))
		if okA && okD && acc <= drafted && drafted > 0 { // more accepted than drafted: not believed
			sp.SpecAccepted, sp.SpecDrafted, sp.HasSpec = acc, drafted, true
		}
	}
	return sp, sp.any()
}

// PerfRequestID is the server's own number of the request an answer's id
// names, where the answer is named as recent TensorRT-LLM versions name
// them (chatcmpl-<number>, cmpl-<number>: its /perf_metrics request_id);
// false for any other id (older versions' random ones, other servers').
func PerfRequestID(responseID string) (uint64, bool) {
	rest, ok := strings.CutPrefix(responseID, "chatcmpl-")
	if !ok {
		rest, ok = strings.CutPrefix(responseID, "cmpl-")
	}
	if !ok || rest == "" || len(rest) > 15 || rest[0] == '+' {
		return 0, false
	}
	n, err := strconv.ParseUint(rest, 10, 64)
	return n, err == nil
}
