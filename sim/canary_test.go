package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseCanary(t *testing.T) {
	good := []struct {
		in   string
		want Canary
	}{
		{"", Canary{}},
		{"0.25:1.5", Canary{Fraction: 0.25, Slowdown: 1.5}},
		{"0.25:1.5:0.02", Canary{Fraction: 0.25, Slowdown: 1.5, ErrorRate: 0.02}},
		{"0.25:1.5:0:30s", Canary{Fraction: 0.25, Slowdown: 1.5, Delay: 30 * time.Second}},
		{" 1 : 1 : 1 : 1m30s ", Canary{Fraction: 1, Slowdown: 1, ErrorRate: 1, Delay: 90 * time.Second}},
		{"0.5:0.8", Canary{Fraction: 0.5, Slowdown: 0.8}},
		{"0.5:100", Canary{Fraction: 0.5, Slowdown: 100}},
		{"0.5:0.8:0:0s:0.05", Canary{Fraction: 0.5, Slowdown: 0.8, Invalid: 0.05}},
	}
	for _, tt := range good {
		c, err := ParseCanary(tt.in)
		if err != nil || c != tt.want {
			t.Errorf("ParseCanary(%q) = %+v, %v; want %+v", tt.in, c, err, tt.want)
			continue
		}
		if back, err := ParseCanary(c.String()); err != nil || back != c {
			t.Errorf("%q: String %q reads back as %+v, %v", tt.in, c.String(), back, err)
		}
	}
	bad := []struct{ in, says string }{
		{"2:1.5", "fraction must be within (0,1]"},
		{"0:1.5", "fraction must be within (0,1]"},
		{"0:0", "fraction must be within (0,1]"},
		{"-0.1:1.5", "fraction"},
		{"NaN:1.5", "not a number"},
		{"0.25", "want FRACTION:SLOWDOWN"},
		{"0.25:1.5:0:1s:0:9", "want FRACTION:SLOWDOWN"},
		{"0.25:1.5:0:1s:9", "invalid share must be within 0..1"},
		{"0.25:1.5:0:1s:x", `the invalid share "x" is not a number`},
		{"a:1.5", `the fraction "a" is not a number`},
		{"0.25:fast", `the slowdown "fast" is not a number`},
		{"0.25:0", "slowdown must be above 0"},
		{"0.25:-1", "slowdown must be above 0"},
		{"0.25:101", "at most 100"},
		{"0.25:Inf", "not a number"},
		{"0.25:1.5:", `the error rate "" is not a number`},
		{"0.25:1.5:2", "error rate must be within 0..1"},
		{"0.25:1.5:-0.1", "error rate must be within 0..1"},
		{"0.25:1.5:0:30", `the delay "30" is not a duration`},
		{"0.25:1.5:0:-1s", "delay must not be negative"},
	}
	for _, tt := range bad {
		_, err := ParseCanary(tt.in)
		if err == nil {
			t.Errorf("ParseCanary(%q) accepted", tt.in)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.says) || !strings.HasPrefix(msg, "bad canary ") || strings.Contains(msg, "\n") || strings.Contains(msg, "--") {
			t.Errorf("ParseCanary(%q): %q, want one line starting bad canary and saying %q, naming no flag", tt.in, msg, tt.says)
		}
	}
	p := testParams()
	for _, c := range []Canary{{Fraction: 2, Slowdown: 1}, {Slowdown: 1.5}, {Fraction: 0.5, Slowdown: 1, Delay: -time.Second}} {
		p.Canary = c
		if err := p.Validate(); err == nil || !strings.HasPrefix(err.Error(), "sim: canary: ") {
			t.Errorf("Validate with canary %+v: %v", c, err)
		}
	}
	p.Canary = Canary{}
	if err := p.Validate(); err != nil {
		t.Errorf("no canary: %v", err)
	}
}

// TestCanaryParams: the canary's costs are the stable pod's scaled, its
// prefill rate divided, its floor raised but never lowered.
func TestCanaryParams(t *testing.T) {
	p := testParams()
	p.Canary = Canary{Fraction: 0.5, Slowdown: 2}
	c := p.canaryParams()
	if c.StepBase != 2*p.StepBase || c.StepPerSeq != 2*p.StepPerSeq || c.StepPerKTok != 2*p.StepPerKTok ||
		c.MinStep != 2*p.MinStep || c.PrefillRate != p.PrefillRate/2 || c.Slots != p.Slots || c.KVTokens != p.KVTokens {
		t.Fatalf("canary params %+v from %+v", c, p)
	}
	p.Canary.Slowdown = 0.5
	if c := p.canaryParams(); c.MinStep != p.MinStep || c.StepBase != p.StepBase/2 {
		t.Fatalf("a faster canary: floor %v, step base %v", c.MinStep, c.StepBase)
	}
}

// answer is one request's answer as the marks tests read it.
type answer struct {
	status  int
	backend string
	body    string
}

func ask(t *testing.T, url, path, body string) answer {
	t.Helper()
	resp, b := post(t, url+path, body)
	return answer{resp.StatusCode, resp.Header.Get(BackendHeader), b}
}

const oneToken = `{"model":"sim-llama-8b","prompt":"a","max_tokens":1}`

// TestCanaryFraction: the canary serves its fraction of the requests,
// within four standard deviations of a binomial's; the header agrees with
// the server's record; the same seed routes the same requests and
// another seed others.
func TestCanaryFraction(t *testing.T) {
	const n, frac = 400, 0.25
	routes := func(seed uint64) map[uint64]bool {
		p, _ := Preset("fast")
		p.Seed, p.Canary = seed, Canary{Fraction: frac, Slowdown: 1}
		s, url := startSim(t, p)
		var wg sync.WaitGroup
		var mu sync.Mutex
		canaries := 0
		jobs := make(chan struct{})
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range jobs {
					a := ask(t, url, "/v1/completions", oneToken)
					if a.status != 200 || (a.backend != "stable" && a.backend != "canary") {
						t.Errorf("answer %d, backend %q", a.status, a.backend)
					}
					mu.Lock()
					if a.backend == "canary" {
						canaries++
					}
					mu.Unlock()
				}
			}()
		}
		for range n {
			jobs <- struct{}{}
		}
		close(jobs)
		wg.Wait()
		recs := waitRecords(t, s, n)
		got := map[uint64]bool{}
		inRecords := 0
		for _, r := range recs {
			got[r.ID] = r.Canary
			if r.Canary {
				inRecords++
			}
		}
		if inRecords != canaries {
			t.Errorf("seed %d: %d answers say canary, %d records", seed, canaries, inRecords)
		}
		sd := math.Sqrt(n * frac * (1 - frac))
		if math.Abs(float64(canaries)-n*frac) > 4*sd {
			t.Errorf("seed %d: %d of %d requests served by the canary, want %.0f±%.0f", seed, canaries, n, n*frac, 4*sd)
		}
		t.Logf("seed %d: %d of %d to the canary", seed, canaries, n)
		return got
	}
	a, b, c := routes(1), routes(1), routes(2)
	same, differ := 0, 0
	for id, canary := range a {
		if b[id] == canary {
			same++
		}
		if c[id] != canary {
			differ++
		}
	}
	if same != len(a) || len(a) != n {
		t.Errorf("seed 1 twice: %d of %d requests routed alike", same, len(a))
	}
	if differ < n/10 {
		t.Errorf("seeds 1 and 2 route only %d of %d requests differently", differ, n)
	}
}

// waitRecords waits (up to 5 s) for n records: each is written just after
// its answer.
func waitRecords(t *testing.T, s *Server, n int) []Record {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); len(s.Records()) < n && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	recs := s.Records()
	if len(recs) != n {
		t.Fatalf("%d records, want %d", len(recs), n)
	}
	return recs
}

// TestCanarySlower: at light load (4 clients, 32 slots) the canary's time
// per output token and E2E are about Slowdown times the stable pod's.
// The slowdown is held as a lower bound the engine's steps keep: the
// canary's 8 steps of at least 24 ms each from admission to its last
// token (a step never ends before its planned time, and a busy machine
// only adds). The ratios are held from above, where a busy machine
// cannot push them (its delays add to both pods alike, so it shrinks
// them): not twice the slowdown. From below a ratio is held only past
// 1.15, a canary slower at all: two CPU hogs beside read 1.34 of 1.5.
func TestCanarySlower(t *testing.T) {
	const slowdown = 1.5
	p := testParams()
	p.StepBase = 16 * time.Millisecond
	p.Canary = Canary{Fraction: 0.5, Slowdown: slowdown}
	s, url := startSim(t, p)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 12 {
				if _, _, err := streamTimes(url, 16, 8); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var tpot, e2e, steps [2]time.Duration // stable, canary
	var count [2]int
	for _, r := range waitRecords(t, s, 48) {
		i := 0
		if r.Canary {
			i = 1
		}
		if r.Status != 200 || r.OutputTokens != 8 {
			t.Fatalf("record %+v", r)
		}
		tpot[i] += r.LastToken.Sub(r.FirstToken) / time.Duration(r.OutputTokens-1)
		e2e[i] += r.E2E()
		steps[i] += r.LastToken.Sub(r.Admitted)
		count[i]++
	}
	if count[0] < 10 || count[1] < 10 {
		t.Fatalf("requests: %d stable, %d canary", count[0], count[1])
	}
	mean := func(v [2]time.Duration) (stable, canary time.Duration) {
		return v[0] / time.Duration(count[0]), v[1] / time.Duration(count[1])
	}
	step := time.Duration(slowdown * float64(p.StepBase)) // testParams: no jitter
	if _, ca := mean(steps); ca < 8*step {
		t.Errorf("the canary's mean from admission to its last token %v: want 8 of its steps, at least %v each", ca, step)
	}
	for _, m := range []struct {
		name string
		v    [2]time.Duration
	}{{"TPOT", tpot}, {"E2E", e2e}} {
		st, ca := mean(m.v)
		ratio := float64(ca) / float64(st)
		t.Logf("mean %s: stable %v (%d), canary %v (%d): %.2f×", m.name, st, count[0], ca, count[1], ratio)
		if ratio < 1.15 || ratio > 1.7 {
			t.Errorf("mean %s: canary %.2f× the stable pod's, want about %.1f×", m.name, ratio, slowdown)
		}
	}
}

// events reads an SSE body's data messages, [DONE] left out.
func events(body string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && d != "[DONE]" {
			out = append(out, d)
		}
	}
	return out
}

func fingerprint(t *testing.T, msg string) (string, bool) {
	t.Helper()
	var m struct {
		FP *string `json:"system_fingerprint"`
	}
	if err := json.Unmarshal([]byte(msg), &m); err != nil {
		t.Fatalf("bad message %q: %v", msg, err)
	}
	if m.FP == nil {
		return "", false
	}
	return *m.FP, true
}

// TestCanaryMarks: every answer, streamed or whole, chat or completions,
// names its build in the header and in every message's
// system_fingerprint; refusals carry the header.
func TestCanaryMarks(t *testing.T) {
	p, _ := Preset("fast")
	p.Canary = Canary{Fraction: 0.5, Slowdown: 1}
	_, url := startSim(t, p)
	bodies := []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"sim-llama-8b","messages":[{"role":"user","content":"a b"}],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`},
		{"/v1/chat/completions", `{"model":"sim-llama-8b","messages":[{"role":"user","content":"a b"}],"max_tokens":3}`},
		{"/v1/completions", `{"model":"sim-llama-8b","prompt":"a b","max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`},
		{"/v1/completions", `{"model":"sim-llama-8b","prompt":"a b","max_tokens":3}`},
		{"/v1/infer", `{"model":"sim-llama-8b","input":"a b","max_tokens":3}`},
	}
	for _, b := range bodies {
		seen := map[string]bool{}
		for try := 0; try < 64 && len(seen) < 2; try++ {
			a := ask(t, url, b.path, b.body)
			if a.status != 200 || (a.backend != "stable" && a.backend != "canary") {
				t.Fatalf("%s: %d, backend %q", b.body, a.status, a.backend)
			}
			seen[a.backend] = true
			want := "fp_sim_" + a.backend
			msgs := []string{strings.TrimSpace(a.body)}
			if strings.Contains(b.body, `"stream":true`) {
				msgs = events(a.body)
				if len(msgs) < 5 { // (role,) 3 tokens, finish, usage
					t.Fatalf("%s: %d messages: %q", b.body, len(msgs), a.body)
				}
			}
			for _, m := range msgs {
				if fp, ok := fingerprint(t, m); !ok || fp != want {
					t.Fatalf("%s answered by %s: message %q has system_fingerprint %q, want %q", b.path, a.backend, m, fp, want)
				}
			}
		}
		if len(seen) != 2 {
			t.Errorf("%s: only %v answered in 64 tries", b.body, seen)
		}
	}
	for _, bad := range []string{`{"model":"nope","prompt":"a","max_tokens":1}`, `{not json`,
		`{"model":"sim-llama-8b","prompt":"a","max_tokens":0}`} {
		if a := ask(t, url, "/v1/completions", bad); a.status < 400 || (a.backend != "stable" && a.backend != "canary") {
			t.Errorf("%s: %d, backend %q", bad, a.status, a.backend)
		}
	}
}

// TestNoCanaryUnchanged: without a canary the answers carry neither the
// header nor the field, byte for byte the answers they always were.
func TestNoCanaryUnchanged(t *testing.T) {
	p := testParams()
	s, url := startSim(t, p)
	a := ask(t, url, "/v1/chat/completions", `{"model":"sim-llama-8b","messages":[{"role":"user","content":"a b"}],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`)
	w := ask(t, url, "/v1/completions", `{"model":"sim-llama-8b","prompt":"a b","max_tokens":2}`)
	if a.backend != "" || w.backend != "" || strings.Contains(a.body+w.body, "system_fingerprint") {
		t.Fatalf("marked without a canary: %q %q\n%s\n%s", a.backend, w.backend, a.body, w.body)
	}
	c := fmt.Sprint(s.created)
	wantStream := `data: {"id":"chatcmpl-sim1","object":"chat.completion.chunk","created":` + c + `,"model":"sim-llama-8b","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-sim1","object":"chat.completion.chunk","created":` + c + `,"model":"sim-llama-8b","choices":[{"index":0,"delta":{"content":" ` + Word(1, 0) + `"},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-sim1","object":"chat.completion.chunk","created":` + c + `,"model":"sim-llama-8b","choices":[{"index":0,"delta":{"content":" ` + Word(1, 1) + `"},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-sim1","object":"chat.completion.chunk","created":` + c + `,"model":"sim-llama-8b","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]}

data: {"id":"chatcmpl-sim1","object":"chat.completion.chunk","created":` + c + `,"model":"sim-llama-8b","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}

data: [DONE]

`
	if a.body != wantStream {
		t.Errorf("stream:\n%s\nwant:\n%s", a.body, wantStream)
	}
	wantWhole := `{"id":"cmpl-sim2","object":"text_completion","created":` + c + `,"model":"sim-llama-8b","choices":[{"index":0,"text":" ` +
		Word(2, 0) + ` ` + Word(2, 1) + `","finish_reason":"length"}],"usage":{"prompt_tokens":2,"completion_tokens":2,"total_tokens":4}}` + "\n"
	if w.body != wantWhole {
		t.Errorf("whole:\n%s\nwant:\n%s", w.body, wantWhole)
	}
}

// TestCanaryDelay: a request that arrives before the delay (counted from
// when Run began) is the stable pod's, one after it takes the canary's
// share (here all). Held against the server's records, whose Arrived is
// the time the route was drawn at, so a slow machine cannot blur it.
func TestCanaryDelay(t *testing.T) {
	const delay = 300 * time.Millisecond
	p, _ := Preset("fast")
	p.Canary = Canary{Fraction: 1, Slowdown: 1, Delay: delay}
	s, url := startSim(t, p)
	for time.Now().Before(time.Now().Add(time.Second)) && s.started.Load() == nil {
		time.Sleep(time.Millisecond)
	}
	t0 := *s.started.Load()
	n := 0
	for ; time.Since(t0) < 2*delay; n++ {
		a := ask(t, url, "/v1/completions", oneToken)
		if a.status != 200 {
			t.Fatalf("answer %d", a.status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var before, after int
	for _, r := range waitRecords(t, s, n) {
		late := r.Arrived.Sub(t0) >= delay
		if r.Canary != late {
			t.Fatalf("request %d arrived %v after the start: canary %v", r.ID, r.Arrived.Sub(t0), r.Canary)
		}
		if late {
			after++
		} else {
			before++
		}
	}
	if before < 5 || after < 5 {
		t.Fatalf("%d requests before the delay, %d after", before, after)
	}
}

// TestCanaryErrors: the error rate is the canary's alone; its 500s say
// so, and the stable pod answers every request.
func TestCanaryErrors(t *testing.T) {
	p, _ := Preset("fast")
	p.Canary = Canary{Fraction: 0.5, Slowdown: 1, ErrorRate: 0.5}
	_, url := startSim(t, p)
	codes := map[string]map[int]int{"stable": {}, "canary": {}}
	for range 200 {
		a := ask(t, url, "/v1/completions", oneToken)
		m, ok := codes[a.backend]
		if !ok {
			t.Fatalf("backend %q", a.backend)
		}
		m[a.status]++
		if a.status == 500 && !strings.Contains(a.body, "simulated internal error (canary)") {
			t.Fatalf("500 body %q", a.body)
		}
	}
	t.Logf("codes by backend: %v", codes)
	if len(codes["stable"]) != 1 || codes["stable"][200] == 0 {
		t.Errorf("the stable pod answered %v", codes["stable"])
	}
	// About 100 canary requests, half of them 500s: 50±20 is four
	// standard deviations.
	if n := codes["canary"][500]; n < 30 || n > 70 || codes["canary"][200] < 30 {
		t.Errorf("the canary answered %v", codes["canary"])
	}
}

// TestCanaryMetrics: /metrics sums both pods (running streams of each),
// /dcgm lists the canary's GPUs after the stable pod's.
func TestCanaryMetrics(t *testing.T) {
	p := testParams()
	p.GPUs = 2
	p.Canary = Canary{Fraction: 0.5, Slowdown: 1}
	s, url := startSim(t, p)
	// Streams long enough to be running when /metrics is read, held open
	// until the test has read it.
	var open []io.ReadCloser
	defer func() {
		for _, b := range open {
			b.Close()
		}
	}()
	backends := map[string]int{}
	for range 16 {
		resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"model":"sim-llama-8b","prompt":"a","max_tokens":4000,"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		backends[resp.Header.Get(BackendHeader)]++
		open = append(open, resp.Body)
	}
	if backends["stable"] == 0 || backends["canary"] == 0 {
		t.Fatalf("backends %v", backends)
	}
	want := fmt.Sprintf(`vllm:num_requests_running{model_name="sim-llama-8b"} %d`, len(open))
	var page string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) { // ends at the page
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if page = string(b); strings.Contains(page, want) {
			break
		}
	}
	if !strings.Contains(page, want) {
		t.Fatalf("backends %v: want %q in\n%s", backends, want, page)
	}
	if s.sched.nRunning.Load() == 0 || s.canary.nRunning.Load() == 0 {
		t.Fatalf("running: stable %d, canary %d", s.sched.nRunning.Load(), s.canary.nRunning.Load())
	}
	resp, err := http.Get(url + "/dcgm")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	dcgm := string(b)
	if n := strings.Count(dcgm, "DCGM_FI_DEV_POWER_USAGE{"); n != 4 ||
		!strings.Contains(dcgm, `DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-sim-0001",device="nvidia1",modelName="infertop sim GPU",Hostname="sim"}`) ||
		!strings.Contains(dcgm, `DCGM_FI_DEV_POWER_USAGE{gpu="2",UUID="GPU-sim-0002",device="nvidia2",modelName="infertop sim GPU",Hostname="sim-canary"}`) {
		t.Fatalf("dcgm page:\n%s", dcgm)
	}
}
