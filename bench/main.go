// Command bench measures infertop against its peers and itself, in one run
// on one machine, and prints a Markdown table (BENCHMARKS.md is its output):
//
//	go run ./bench -duration 10s
//
// 1. Request generation on a minimal non-streaming JSON endpoint at a fixed
// concurrency: infertop's engine against hey, wrk and vegeta (each is run
// when it is on the PATH). 2. Streaming: infertop against a raw reader that
// measures nothing, on the sim at zero model cost. 3. Accuracy: the sim's
// server-side record against infertop's figures. 4. The UI's cost: one
// frame's render. 5. Memory over a busy run. Every endpoint is on 127.0.0.1.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/ui"
)

func main() {
	dur := flag.Duration("duration", 10*time.Second, "length of each measured run")
	conc := flag.Int("c", 64, "concurrency of the request-generation comparison")
	streams := flag.Int("streams", 1000, "concurrent streams of the streaming comparison")
	flag.Parse()
	var out bytes.Buffer
	fmt.Fprintf(&out, "# infertop benchmarks\n\n`go run ./bench -duration %s` on %s/%s, %d CPUs, %s, %s.\n\n",
		*dur, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format("2006-01-02"))
	requestGeneration(&out, *dur, *conc)
	streaming(&out, *dur, *streams)
	accuracy(&out, *dur)
	uiCost(&out)
	memory(&out, *dur)
	os.Stdout.Write(out.Bytes())
}

// minimalServer answers every request with the same small JSON at once.
func minimalServer() *httptest.Server {
	body := []byte(`{"output":"ok","input_tokens":1,"output_tokens":1}`)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
}

// engineRun runs infertop's engine with do for d and returns its last snapshot.
func engineRun(do func(context.Context, probe.Request) probe.Result, k load.Knobs, d time.Duration, sub bool) load.Snapshot {
	eng, _ := load.New(load.Config{Do: do, Knobs: k})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); eng.Run(ctx) }()
	if sub { // a dashboard watching: one render per snapshot
		snaps, _ := eng.Subscribe()
		m, _ := ui.New(eng, ui.Options{Renderer: plain(), Snapshots: nil})
		next, _ := m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
		go func() {
			for s := range snaps {
				next, _ = next.Update(ui.SnapshotMsg(s))
			}
		}()
	}
	time.Sleep(d)
	cancel()
	<-done
	return eng.Latest()
}

func plain() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	return r
}

var rpsRE = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
var vegetaRE = regexp.MustCompile(`Requests\s+\[total, rate, throughput\]\s+\d+,\s+[0-9.]+,\s+([0-9.]+)`)

func peer(name string, args []string, stdin string, re *regexp.Regexp) (float64, string) {
	path, err := exec.LookPath(name)
	if err != nil {
		return 0, "not installed"
	}
	cmd := exec.Command(path, args...)
	cmd.Stdin = strings.NewReader(stdin)
	outb, err := cmd.CombinedOutput()
	if err != nil {
		return 0, "failed: " + strings.TrimSpace(string(outb))
	}
	m := re.FindSubmatch(outb)
	if m == nil {
		return 0, "no rate in its output"
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v, ""
}

func requestGeneration(out *bytes.Buffer, d time.Duration, conc int) {
	srv := minimalServer()
	defer srv.Close()
	client, _ := probe.New(probe.Config{URL: srv.URL + "/v1/infer", Model: "m", API: probe.Generic, MaxConns: conc * 2})
	defer client.Close()
	s := engineRun(client.Do, load.Knobs{Concurrency: conc, PromptTokens: 4, OutputTokens: 1}, d, false)
	infertop := float64(s.TotalCompleted) / s.Elapsed.Seconds()
	secs := strconv.Itoa(int(d.Seconds()))
	body := `{"model":"m","input":"hi","max_tokens":1}`
	os.WriteFile(os.TempDir()+"/bench-body.json", []byte(body), 0o644)
	os.WriteFile(os.TempDir()+"/bench-post.lua", []byte("wrk.method = \"POST\"\nwrk.body = '"+body+"'\nwrk.headers[\"Content-Type\"] = \"application/json\"\n"), 0o644)
	hey, heyNote := peer("hey", []string{"-z", secs + "s", "-c", strconv.Itoa(conc), "-m", "POST", "-T", "application/json", "-d", body, srv.URL + "/v1/infer"}, "", rpsRE)
	wrk, wrkNote := peer("wrk", []string{"-t2", "-c" + strconv.Itoa(conc), "-d" + secs + "s", "-s", os.TempDir() + "/bench-post.lua", srv.URL + "/v1/infer"}, "", rpsRE)
	vegeta, vegNote := vegetaRun(srv.URL+"/v1/infer", conc, secs)
	fmt.Fprintf(out, "## 1. Request generation\n\nA minimal JSON server in the bench, no streaming, concurrency %d, %s each, the server sharing the cores.\n\n", conc, d)
	fmt.Fprintf(out, "| tool | req/s | infertop ÷ tool |\n|---|---:|---:|\n| infertop | %.0f | 1.00 |\n", infertop)
	for _, p := range []struct {
		name, note string
		v          float64
	}{{"hey", heyNote, hey}, {"wrk", wrkNote, wrk}, {"vegeta", vegNote, vegeta}} {
		if p.v > 0 {
			fmt.Fprintf(out, "| %s | %.0f | %.2f |\n", p.name, p.v, infertop/p.v)
		} else {
			fmt.Fprintf(out, "| %s | — | %s |\n", p.name, p.note)
		}
	}
	out.WriteString("\n")
}

func vegetaRun(url string, conc int, secs string) (float64, string) {
	path, err := exec.LookPath("vegeta")
	if err != nil {
		return 0, "not installed"
	}
	attack := exec.Command(path, "attack", "-rate=0", "-max-workers="+strconv.Itoa(conc), "-workers="+strconv.Itoa(conc), "-duration="+secs+"s",
		"-body="+os.TempDir()+"/bench-body.json", "-header=Content-Type: application/json")
	attack.Stdin = strings.NewReader("POST " + url + "\n")
	results, err := attack.Output()
	if err != nil {
		return 0, "failed: " + err.Error()
	}
	report := exec.Command(path, "report")
	report.Stdin = bytes.NewReader(results)
	rep, err := report.Output()
	if err != nil {
		return 0, "report failed"
	}
	m := vegetaRE.FindSubmatch(rep)
	if m == nil {
		return 0, "no rate in its report"
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v, ""
}

// startSim runs the sim on 127.0.0.1 and returns its base URL.
func startSim(p sim.Params) (*sim.Server, string, func()) {
	s, _ := sim.New(p)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Serve(ctx, ln, nil) }()
	return s, "http://" + ln.Addr().String(), func() { cancel(); <-done }
}

// rawStreams reads n streams for d and counts token messages, measuring nothing.
func rawStreams(url string, n int, d time.Duration) float64 {
	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var tokens atomic.Int64
	var wg sync.WaitGroup
	body := `{"model":"sim-llama-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":200,"stream":true}`
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions", strings.NewReader(body))
				resp, err := client.Do(req)
				if err != nil {
					return
				}
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					if bytes.Contains(sc.Bytes(), []byte(`"content":" `)) {
						tokens.Add(1)
					}
				}
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	return float64(tokens.Load()) / d.Seconds()
}

func streaming(out *bytes.Buffer, d time.Duration, n int) {
	p, _ := sim.Preset("fast")
	_, url, stop := startSim(p)
	defer stop()
	raw := rawStreams(url, n, d)
	client, _ := probe.New(probe.Config{URL: url + "/v1/chat/completions", Model: p.Model, MaxConns: n * 2})
	s := engineRun(client.Do, load.Knobs{Concurrency: n, PromptTokens: 4, OutputTokens: 200}, d, false)
	client.Close()
	client2, _ := probe.New(probe.Config{URL: url + "/v1/chat/completions", Model: p.Model, MaxConns: n * 2})
	withUI := engineRun(client2.Do, load.Knobs{Concurrency: n, PromptTokens: 4, OutputTokens: 200}, d, true)
	client2.Close()
	rate := func(s load.Snapshot) float64 { return float64(s.Run.OutTokens) / s.Elapsed.Seconds() }
	// Output tokens counted when requests end: requests still in flight at
	// the end are not counted, so long outputs understate; the in-flight
	// messages are the same order for both readers.
	fmt.Fprintf(out, "## 2. Streaming\n\nThe sim at zero model cost, %d concurrent streams of 200 tokens, %s each. The raw reader counts token messages and measures nothing; infertop counts the output tokens of finished requests.\n\n", n, d)
	fmt.Fprintf(out, "| reader | tokens/s | ÷ raw |\n|---|---:|---:|\n| raw reader | %.0f | 1.00 |\n| infertop | %.0f | %.2f |\n| infertop with a 160x48 dashboard rendering every snapshot | %.0f | %.2f |\n\n",
		raw, rate(s), rate(s)/raw, rate(withUI), rate(withUI)/raw)
}

func accuracy(out *bytes.Buffer, d time.Duration) {
	fmt.Fprintf(out, "## 3. Accuracy\n\nThe default sim (32 slots), prompt 256, output 32; the sim's own record of the same requests against infertop's.\n\n")
	fmt.Fprintf(out, "| load | metric | server p50 | infertop p50 | server p99 | infertop p99 |\n|---|---|---:|---:|---:|---:|\n")
	for _, c := range []int{8, 64} {
		p, _ := sim.Preset("default")
		srv, url, stop := startSim(p)
		client, _ := probe.New(probe.Config{URL: url + "/v1/chat/completions", Model: p.Model, MaxConns: 256})
		eng, _ := load.New(load.Config{Do: client.Do, Knobs: load.Knobs{Concurrency: c, PromptTokens: 256, OutputTokens: 32}})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); eng.Run(ctx) }()
		time.Sleep(d)
		eng.SetPaused(true)
		for eng.InFlight() > 0 {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(400 * time.Millisecond)
		s := eng.Latest()
		cancel()
		<-done
		client.Close()
		var ttft, e2e []time.Duration
		for _, r := range srv.Records() {
			if !r.Cancelled && r.Status == 200 {
				ttft, e2e = append(ttft, r.TTFT()), append(e2e, r.E2E())
			}
		}
		stop()
		slices.Sort(ttft)
		slices.Sort(e2e)
		pct := func(x []time.Duration, q float64) time.Duration {
			if len(x) == 0 {
				return 0
			}
			return x[min(len(x)-1, int(q*float64(len(x))))]
		}
		label := fmt.Sprintf("concurrency %d (%s)", c, map[bool]string{true: "under the slots", false: "saturating"}[c <= 32])
		for _, m := range []struct {
			name string
			srv  []time.Duration
			d    load.Dist
		}{{"TTFT", ttft, s.Run.Latency[load.TTFT]}, {"E2E", e2e, s.Run.Latency[load.E2E]}} {
			fmt.Fprintf(out, "| %s | %s | %v | %v | %v | %v |\n", label, m.name,
				pct(m.srv, 0.5).Round(10*time.Microsecond), m.d.P50.Round(10*time.Microsecond), pct(m.srv, 0.99).Round(10*time.Microsecond), m.d.P99.Round(10*time.Microsecond))
		}
	}
	out.WriteString("\n")
}

func uiCost(out *bytes.Buffer) {
	fmt.Fprintf(out, "## 4. The UI's cost\n\nOne full redraw of every panel from a busy snapshot (the engine's own, after a second of load on the fast sim), four a second in the dashboard.\n\n| size | per frame |\n|---|---:|\n")
	p, _ := sim.Preset("fast")
	_, url, stop := startSim(p)
	client, _ := probe.New(probe.Config{URL: url + "/v1/chat/completions", Model: p.Model})
	snap := engineRun(client.Do, load.Knobs{Concurrency: 16, PromptTokens: 64, OutputTokens: 64}, 2*time.Second, false)
	client.Close()
	stop()
	for _, size := range [][2]int{{80, 24}, {160, 48}, {240, 70}} {
		m, _ := ui.New(nil, ui.Options{Renderer: plain()})
		var model tea.Model = m
		model, _ = model.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		const n = 50
		t0 := time.Now()
		for range n {
			model, _ = model.Update(ui.SnapshotMsg(snap))
		}
		fmt.Fprintf(out, "| %dx%d | %v |\n", size[0], size[1], (time.Since(t0) / n).Round(10*time.Microsecond))
	}
	out.WriteString("\n")
}

func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v * 1024
		}
	}
	return 0
}

func memory(out *bytes.Buffer, d time.Duration) {
	srv := minimalServer()
	defer srv.Close()
	client, _ := probe.New(probe.Config{URL: srv.URL + "/v1/infer", Model: "m", API: probe.Generic})
	defer client.Close()
	eng, _ := load.New(load.Config{Do: client.Do, Knobs: load.Knobs{Concurrency: 32, PromptTokens: 16, OutputTokens: 1}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); eng.Run(ctx) }()
	var samples []int64
	for i := 0; i < int(3*d/time.Second); i++ {
		time.Sleep(time.Second)
		samples = append(samples, rss())
	}
	cancel()
	<-done
	s := eng.Latest()
	third := len(samples) / 3
	fmt.Fprintf(out, "## 5. Memory\n\n%d requests at %.0f req/s over %s against the minimal server: resident memory %d MiB after the first third, %d MiB at the end (%d samples).\n",
		s.TotalCompleted, float64(s.TotalCompleted)/s.Elapsed.Seconds(), s.Elapsed.Round(time.Second), samples[max(third-1, 0)]>>20, samples[len(samples)-1]>>20, len(samples))
}
