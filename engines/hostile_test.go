package engines

import (
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/infertop/infertop/tools/hostile"
)

// repeat is a reader of n bytes of a line said again and again, made as
// it is read: a page far larger than the test holds.
type repeat struct {
	line  string
	n, at int
}

func (r *repeat) Read(p []byte) (int, error) {
	if r.at >= r.n {
		return 0, io.EOF
	}
	k := 0
	for k < len(p) && r.at < r.n {
		c := copy(p[k:min(len(p), k+r.n-r.at)], r.line[r.at%len(r.line):])
		k += c
		r.at += c
	}
	return k, nil
}

// series is a reader of n samples of one family (or of names in turn),
// each a series of its own.
type series struct {
	name      string
	names     []string
	n, i      int
	line, buf []byte // the line made, what of it is left to read
}

func (s *series) Read(p []byte) (int, error) {
	if len(s.buf) == 0 {
		if s.i >= s.n {
			return 0, io.EOF
		}
		name := s.name
		if len(s.names) > 0 {
			name = s.names[s.i%len(s.names)]
		}
		s.line = append(append(s.line[:0], name...), `{id="`...)
		s.line = append(strconv.AppendInt(s.line, int64(s.i), 10), "\"} 1\n"...)
		s.buf = s.line
		s.i++
	}
	k := copy(p, s.buf)
	s.buf = s.buf[k:]
	return k, nil
}

// counters are the names of every counter and gauge the tables read.
func counters() []string {
	var out []string
	for _, n := range Names() {
		if !strings.HasSuffix(n, "_seconds") && !strings.HasSuffix(n, "_ms") {
			out = append(out, n)
		}
	}
	return out
}

// TestHostilePages: pages past every bound are refused, or read with the
// part that cannot be true set aside; none costs more than a few MiB.
func TestHostilePages(t *testing.T) {
	for _, tt := range []struct {
		name string
		page func() io.Reader
		want error  // nil: read
		max  uint64 // bytes allocated at most
	}{
		{"100 MB body", func() io.Reader {
			return &repeat{line: "process_open_fds{a=\"" + strings.Repeat("x", 1000) + "\"} 1\n", n: 100 << 20}
		}, ErrBounds, 1 << 20},
		{"10 MB line", func() io.Reader {
			return io.MultiReader(strings.NewReader("vllm:num_requests_running{a=\""), &repeat{line: strings.Repeat("x", 4096), n: 10 << 20})
		}, ErrBounds, 1 << 20},
		{"10 MB line of another family", func() io.Reader {
			return io.MultiReader(strings.NewReader("vllm:lora_requests_info{running_lora_adapters=\""), &repeat{line: strings.Repeat("x", 4096), n: 10 << 20},
				strings.NewReader("\"} 1\nvllm:num_requests_running 1\n"))
		}, nil, 1 << 20},
		{"2^17 samples of the families read", func() io.Reader {
			return &series{names: counters(), n: 1<<17 + 1}
		}, ErrBounds, 12 << 20},
		{"10^4 series of a family read", func() io.Reader { return &series{name: "vllm:num_requests_running", n: 1e4} }, ErrBounds, 4 << 20},
		{"10^6 series of another", func() io.Reader {
			return io.MultiReader(&series{name: "a", n: 1e6}, strings.NewReader("vllm:num_requests_running 1\n"))
		}, nil, 1 << 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			got := hostile.Allocated(func() { _, err = Parse(tt.page()) })
			t.Logf("%d KiB allocated: %v", got>>10, err)
			if !errors.Is(err, tt.want) || tt.want == nil && err != nil {
				t.Errorf("err %v, want %v", err, tt.want)
			}
			if got > tt.max {
				t.Errorf("allocated %d KiB, at most %d", got>>10, tt.max>>10)
			}
		})
	}
}

// TestImplausible: numbers that cannot be true are set aside; buckets
// out of order are sorted, counts that fall are held up, a series said
// twice is read once.
func TestImplausible(t *testing.T) {
	r := page(t, `vllm:num_requests_running NaN
vllm:num_requests_waiting{engine="1"} -3
vllm:num_requests_waiting 2
vllm:prompt_tokens_total +Inf
vllm:generation_tokens_total 1e300
vllm:num_preemptions_total{engine="0"} 4
vllm:num_preemptions_total{engine="0"} 4
vllm:kv_cache_usage_perc 7
vllm:time_to_first_token_seconds_bucket{le="1"} 8
vllm:time_to_first_token_seconds_bucket{le="0.1"} 9
vllm:time_to_first_token_seconds_bucket{le="+Inf"} 10
vllm:time_to_first_token_seconds_bucket{le="0.1"} 500
vllm:e2e_request_latency_seconds_bucket{le="NaN"} 1
vllm:e2e_request_latency_seconds_bucket{le="+Inf"} 1
vllm:request_queue_time_seconds_bucket{le="0.5"} -1
vllm:inter_token_latency_seconds_bucket{le="1e9"} 1
`)
	checkValues(t, "implausible", r, Reading{Engine: "vllm", Waiting: has(2), Preemptions: has(4)})
	if want := (&Histogram{Bounds: []float64{0.1, 1, math.Inf(1)}, Counts: []float64{9, 9, 10}}); !reflect.DeepEqual(r.TTFT, want) {
		t.Errorf("ttft %+v, want %+v", r.TTFT, want)
	}
	if r.E2E != nil || r.Queue != nil || r.ITL != nil {
		t.Errorf("histograms that cannot be true read: %+v %+v %+v", r.E2E, r.Queue, r.ITL)
	}
	// Past maxBuckets distinct bounds the histogram is set aside, the
	// page still read.
	var wide strings.Builder
	wide.WriteString("vllm:num_requests_running 1\n")
	for i := range maxBuckets + 1 {
		fmt.Fprintf(&wide, "vllm:time_to_first_token_seconds_bucket{le=\"%d\"} %d\n", i, i)
	}
	if r := page(t, wide.String()); r.TTFT != nil || r.Running != has(1) {
		t.Errorf("%d bounds: %+v", maxBuckets+1, r)
	}
}

// FuzzParse: whatever the page, Parse ends without a panic, and what it
// reads holds its promises: plausible numbers, histograms sorted and
// cumulative with +Inf last, quantiles inside their bounds, Since of a
// reading and itself nothing.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"vllm:num_requests_running 1\n",
		"vllm:time_to_first_token_seconds_bucket{le=\"0.1\"} 1\nvllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} 2\n",
		"{\"vllm:num_requests_running\",a=\"b\"} 3\n",
		"U__vllm_3a_prompt__tokens__total 4\n",
		"vllm:request_success_total{finished_reason=\"abort\\\"\"} 1\n",
		"vllm:num_requests_running{ garbage\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(strings.NewReader(s))
		if err != nil {
			return
		}
		for f, v := range r.values() {
			if v.Has && (!plausible(v.V) || field(f).averaged() && v.V > 1) {
				t.Fatalf("field %d: %v", f, v.V)
			}
		}
		for _, h := range r.hists() {
			if *h == nil {
				continue
			}
			b, c := (*h).Bounds, (*h).Counts
			if len(b) != len(c) || len(b) < 2 || !math.IsInf(b[len(b)-1], 1) {
				t.Fatalf("histogram %+v", *h)
			}
			for i := 1; i < len(b); i++ {
				if !(b[i] > b[i-1]) || c[i] < c[i-1] {
					t.Fatalf("histogram %+v", *h)
				}
			}
			if lo, hi, ok := (*h).Quantile(0.99); ok && !(lo <= hi && lo >= 0) {
				t.Fatalf("p99 in (%v, %v]", lo, hi)
			}
		}
		if d, reset := Since(r, r); reset || d.Requests.V != 0 || d.TTFT.Total() != 0 {
			t.Fatalf("since itself: %v %+v", reset, d)
		}
	})
}
