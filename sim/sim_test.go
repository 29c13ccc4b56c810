package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func startSim(t *testing.T, p Params) (*Server, string) {
	t.Helper()
	s, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() { cancel(); <-done; hs.Close() })
	return s, hs.URL
}

func testParams() Params {
	p, _ := Preset("default")
	p.Jitter = 0
	return p
}

func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestChatStream(t *testing.T) {
	_, url := startSim(t, testParams())
	resp, body := post(t, url+"/v1/chat/completions",
		`{"model":"sim-llama-8b","messages":[{"role":"user","content":"one two three"}],"max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
	// role, 5 tokens, finish, usage, [DONE]
	if len(events) != 9 || events[8] != "data: [DONE]" {
		t.Fatalf("%d events: %q", len(events), events)
	}
	var content []string
	for _, ev := range events[:8] {
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(ev, "data: ")), &c); err != nil {
			t.Fatalf("bad chunk %q: %v", ev, err)
		}
		if len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
			content = append(content, c.Choices[0].Delta.Content)
		}
		if c.Usage != nil && (c.Usage.PromptTokens != 3+7 || c.Usage.CompletionTokens != 5) {
			t.Fatalf("usage %+v", c.Usage)
		}
	}
	if len(content) != 5 {
		t.Fatalf("content chunks %q", content)
	}
}

func TestOtherEndpoints(t *testing.T) {
	s, url := startSim(t, testParams())
	tests := []struct {
		path, body string
		status     int
		contains   string
	}{
		{"/v1/chat/completions", `{"model":"sim-llama-8b","messages":[{"role":"user","content":[{"type":"text","text":"a b"}]}],"max_tokens":3}`, 200, `"completion_tokens":3`},
		{"/v1/completions", `{"model":"sim-llama-8b","prompt":"a b c d","max_tokens":2}`, 200, `"prompt_tokens":4,"completion_tokens":2`},
		{"/v1/completions", `{"model":"sim-llama-8b","prompt":"a","max_tokens":2,"stream":true}`, 200, `"text":`},
		{"/v1/infer", `{"model":"sim-llama-8b","input":"a b c","max_tokens":4}`, 200, `"input_tokens":3,"output_tokens":4`},
		{"/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, 404, "does not exist"},
		{"/v1/chat/completions", `{"model":"sim-llama-8b","messages":[{"role":"user","content":"x"}],"max_tokens":1000000}`, 400, "maximum context length"},
		{"/v1/chat/completions", `{not json`, 400, "invalid JSON"},
	}
	for _, tt := range tests {
		resp, body := post(t, url+tt.path, tt.body)
		if resp.StatusCode != tt.status || !strings.Contains(body, tt.contains) {
			t.Errorf("%s %s: %d %s", tt.path, tt.body, resp.StatusCode, body)
		}
	}
	for path, want := range map[string]string{
		"/v1/models": `"id":"sim-llama-8b"`,
		"/health":    "",
		"/metrics":   "vllm:num_requests_running{",
	} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
		}
	}
	// The record is written just after the answer; wait for the last one.
	for deadline := time.Now().Add(2 * time.Second); len(s.Records()) < 4 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	resp, _ := http.Get(url + "/metrics")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"vllm:time_to_first_token_seconds_bucket{", "vllm:kv_cache_usage_perc{", "vllm:generation_tokens_total{", `vllm:request_success_total{model_name="sim-llama-8b",finished_reason="length"} 4`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if n := len(s.Records()); n != 4 {
		t.Errorf("%d records, want 4", n)
	}
}

func TestFaults(t *testing.T) {
	p := testParams()
	p.Faults = Faults{HTTP500: 0.3, HTTP429: 0.3}
	_, url := startSim(t, p)
	codes := map[int]int{}
	for range 100 {
		resp, _ := post(t, url+"/v1/completions", `{"model":"sim-llama-8b","prompt":"a","max_tokens":1}`)
		codes[resp.StatusCode]++
		if resp.StatusCode == 429 && resp.Header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
	}
	for _, c := range []int{200, 429, 500} {
		if codes[c] < 15 {
			t.Errorf("codes %v: too few %d", codes, c)
		}
	}
}

// streamTimes sends one streamed chat request and returns client-side TTFT
// and E2E.
func streamTimes(url string, promptWords, maxTokens int) (ttft, e2e time.Duration, err error) {
	body := fmt.Sprintf(`{"model":"sim-llama-8b","messages":[{"role":"user","content":%q}],"max_tokens":%d,"stream":true}`,
		strings.TrimSpace(strings.Repeat("word ", promptWords)), maxTokens)
	start := time.Now()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"content":" `) {
			if ttft == 0 {
				ttft = time.Since(start)
			}
			e2e = time.Since(start)
		}
	}
	return ttft, e2e, sc.Err()
}

// closedLoop runs n workers for d and returns every TTFT seen.
func closedLoop(t *testing.T, url string, n, promptWords, maxTokens int, d time.Duration) []time.Duration {
	t.Helper()
	var mu sync.Mutex
	var ttfts []time.Duration
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				ttft, _, err := streamTimes(url, promptWords, maxTokens)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				ttfts = append(ttfts, ttft)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(ttfts)
	return ttfts
}

func pct(s []time.Duration, q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// TestKnee: below the slot count TTFT stays near the prefill cost; past it,
// requests queue for whole generations and TTFT breaks sharply. Judged
// at the median: below the knee some 60 requests are timed, and their
// p99 is their slowest, which one pause of a busy machine sets.
func TestKnee(t *testing.T) {
	p := testParams()
	p.Slots, p.StepBase, p.StepPerSeq = 8, 2*time.Millisecond, 100*time.Microsecond
	_, url := startSim(t, p)
	below := closedLoop(t, url, 6, 16, 50, 1500*time.Millisecond)
	above := closedLoop(t, url, 16, 16, 50, 1500*time.Millisecond)
	b50, a50 := pct(below, 0.5), pct(above, 0.5)
	t.Logf("TTFT p50 %v, p99 %v of %d at 6 clients; p50 %v, p99 %v of %d at 16 (8 slots)",
		b50, pct(below, 0.99), len(below), a50, pct(above, 0.99), len(above))
	// A generation of 50 tokens takes at least 50 steps of 2 ms (a step
	// never ends before its planned time): a queued request waits about
	// that long, while one that finds a free slot waits for one step and
	// its prefill.
	if a50 < 3*b50 || a50 < 100*time.Millisecond {
		t.Fatalf("no knee: TTFT p50 %v below the slot count, %v above", b50, a50)
	}
}

// TestPromptAndBatchCost: TTFT grows with prompt length, and ITL with the
// batch size. The cost model is held from plan's own figures; that the
// engine waits them out, from the sim's records, as lower bounds: a step
// never ends before its planned time, and a busy machine only adds to it.
// (Latencies compared with one another flaked: CI read one sequence
// alone at 662 ms, 2.6 times its steps, and above a batch of 16.)
func TestPromptAndBatchCost(t *testing.T) {
	p := testParams()
	p.PrefillRate = 20000 // 2000 tokens take 100 ms
	step := func(prefill bool, prompts ...int) time.Duration {
		s := newScheduler(p)
		for _, n := range prompts {
			q := &seq{prompt: n}
			if prefill {
				q.prefillLeft = n
			}
			s.running = append(s.running, q)
		}
		return s.plan()
	}
	near := func(got, want time.Duration) bool { return got > want-time.Microsecond && got < want+time.Microsecond }
	// A prompt's prefill costs its tokens at the prefill rate.
	if short, long := step(true, 10), step(true, 2000); !near(long-short, 1990*time.Second/20000) {
		t.Errorf("planned prefill steps: %v for 10 tokens, %v for 2000: want 99.5 ms between", short, long)
	}
	// Each sequence in the batch adds its step cost (and its context's).
	sixteen := make([]int, 16)
	for i := range sixteen {
		sixteen[i] = 4
	}
	if alone, batch := step(false, 4), step(false, sixteen...); !near(batch-alone, 15*p.StepPerSeq+15*4*p.StepPerKTok/1000) {
		t.Errorf("planned decode steps: %v alone, %v in a batch of 16: want 15 sequences' cost between", alone, batch)
	}

	s, url := startSim(t, p)
	// The long prompt's first token waits out its prefill.
	if _, _, err := streamTimes(url, 2000, 2); err != nil {
		t.Fatal(err)
	}
	long := waitRecords(t, s, 1)[0]
	prefill := time.Duration(float64(long.PromptTokens) / p.PrefillRate * float64(time.Second))
	if long.PromptTokens < 2000 || long.FirstToken.Sub(long.Admitted) < prefill {
		t.Fatalf("%d prompt tokens, first token %v after admission: want at least their prefill, %v", long.PromptTokens, long.FirstToken.Sub(long.Admitted), prefill)
	}

	// Sixteen sequences of 40 tokens at once: each step of the batch costs
	// 16 sequences' 250 µs on top of its 6 ms. They arrive during a gate's
	// 300 ms prefill step, so that they are admitted together after it.
	gate := make(chan error, 1)
	go func() { _, _, err := streamTimes(url, 6000, 1); gate <- err }()
	for deadline := time.Now().Add(5 * time.Second); s.sched.nRunning.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the gate's request never ran")
		}
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := streamTimes(url, 4, 40); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := <-gate; err != nil {
		t.Fatal(err)
	}
	var batched []time.Duration
	for _, r := range waitRecords(t, s, 18) {
		if r.PromptTokens < 100 {
			if r.Status != 200 || r.OutputTokens != 40 {
				t.Fatalf("record %+v", r)
			}
			batched = append(batched, r.LastToken.Sub(r.Admitted))
		}
	}
	slices.Sort(batched)
	// 40 steps of at least 12 of the 16: the median's bound, which the
	// steps without the batch's cost (about 6.25 ms each) stay under.
	bound := 40 * (p.StepBase + 12*p.StepPerSeq)
	t.Logf("admission to last token in a batch of 16: %v (bound %v)", batched, bound)
	if pct(batched, 0.5) < bound {
		t.Fatalf("admission to last token in a batch of 16: median %v, want at least %v: batch cost missing", pct(batched, 0.5), bound)
	}
}

func TestCancelFreesSlot(t *testing.T) {
	p := testParams()
	p.Slots = 1
	s, url := startSim(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions",
		strings.NewReader(`{"model":"sim-llama-8b","messages":[{"role":"user","content":"x"}],"max_tokens":10000,"stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Read(make([]byte, 100))
	cancel()
	resp.Body.Close()
	// The single slot must come free for the next request.
	if _, e2e, err := streamTimes(url, 1, 3); err != nil || e2e == 0 || e2e > 2*time.Second {
		t.Fatalf("next request: e2e %v err %v", e2e, err)
	}
	deadline := time.Now().Add(10 * time.Second) // a bound on a hang: it ends at the record
	for time.Now().Before(deadline) {
		for _, r := range s.Records() {
			if r.Cancelled {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no cancelled record")
}

func TestParams(t *testing.T) {
	for _, name := range PresetNames() {
		p, err := Preset(name)
		if err != nil || p.Validate() != nil {
			t.Errorf("preset %s: %v %v", name, err, p.Validate())
		}
	}
	if _, err := Preset("nope"); err == nil {
		t.Error("unknown preset accepted")
	}
	p := testParams()
	p.Slots = 0
	if p.Validate() == nil {
		t.Error("zero slots accepted")
	}
}

func TestCountTokens(t *testing.T) {
	for in, want := range map[string]int{"": 0, "a b  c": 3, "abcdef": 1, "abcdefg": 2, " extraordinarily\n": 3} {
		if got := CountTokens(in); got != want {
			t.Errorf("CountTokens(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestServeStops(t *testing.T) {
	s, err := New(testParams())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, nil) }()
	// A stream in flight when the server stops is ended, not left hanging.
	go streamTimes("http://"+ln.Addr().String(), 4, 100000)
	resp, err := http.Get("http://" + ln.Addr().String() + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", resp, err)
	}
	resp.Body.Close()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Serve did not return")
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestDCGM(t *testing.T) {
	p := testParams()
	p.GPUs = 3
	_, url := startSim(t, p)
	get := func() string {
		resp, err := http.Get(url + "/dcgm")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	first := get()
	if strings.Count(first, "DCGM_FI_DEV_POWER_USAGE{") != 3 || !strings.Contains(first, `DCGM_FI_DEV_POWER_USAGE{gpu="0"`) {
		t.Fatalf("page:\n%s", first)
	}
	// Idle: 90 W each.
	if !strings.Contains(first, `modelName="infertop sim GPU",Hostname="sim"} 90`) {
		t.Fatalf("idle power missing:\n%s", first)
	}
	// The counter moves with time: poll for it (was a 200 ms sleep).
	for deadline := time.Now().Add(5 * time.Second); get() == first; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the energy counter did not move")
		}
	}
}

func TestParseFaults(t *testing.T) {
	f, err := ParseFaults("500=0.1, reset=0.2,stall-mid=0.05,trickle=0.01,pause=3s")
	if err != nil || f.HTTP500 != 0.1 || f.Reset != 0.2 || f.StallMid != 0.05 || f.Trickle != 0.01 || f.Pause != 3*time.Second {
		t.Fatalf("%+v %v", f, err)
	}
	if f.pick(0.05) != 0 || f.pick(0.15) != 2 || f.pick(0.32) != 4 || f.pick(0.355) != 7 || f.pick(0.9) != -1 {
		t.Fatal("pick")
	}
	for _, bad := range []string{"boom=0.1", "reset=2", "reset", "pause=-1s"} {
		if _, err := ParseFaults(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	p := testParams()
	p.Faults = Faults{Reset: 0.7, Stall: 0.6}
	if p.Validate() == nil {
		t.Error("faults adding up past 1 accepted")
	}
}
