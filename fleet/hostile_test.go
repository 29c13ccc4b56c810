package fleet

import (
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math"
	"runtime"
	"sync/atomic"

	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/discover"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
)

// TestUnreachableSaysWhy: an agent that never answers in a way the
// follower takes is unreachable with its reason, whatever stopped it.
func TestUnreachableSaysWhy(t *testing.T) {
	big := strings.Repeat(" ", MaxStateBytes+1)
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close) // after the parallel subtests
	pool := x509.NewCertPool()
	pool.AddCert(tlsSrv.Certificate())
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(plain.Close)
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(elsewhere.Close)
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"version":"test"` + big + `}`)) }))
	t.Cleanup(huge.Close)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(redirect.Close)
	headers := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range 8000 {
			w.Header().Add(fmt.Sprint("X-H", i), big[:1000])
		}
	}))
	t.Cleanup(headers.Close)
	host := func(u string) string { return u[strings.Index(u, "//")+2:] }
	for _, c := range []struct {
		name, addr, want string
		mod              func(*Config)
	}{
		{"a name mismatch", host(tlsSrv.URL), "certificate", func(c *Config) { c.PlainLoopback, c.RootCAs, c.ServerName = false, pool, "agent.example" }},
		{"a self-signed certificate", host(tlsSrv.URL), "certificate", func(c *Config) { c.PlainLoopback = false }},
		{"TLS to a plain agent", host(plain.URL), "plain HTTP, not TLS", func(c *Config) { c.PlainLoopback = false }},
		{"a state past 64 KB", host(huge.URL), "past the bytes read (65536)", nil},
		{"a redirect", host(redirect.URL), "redirect", nil},
		// Go's transport holds up to 10 MB of headers a response: 8 MB
		// from each of a hundred agents polled together is 800 MB.
		{"8 MB of headers", host(headers.URL), "headers exceeded", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// Each poll may take its time (a TLS handshake under the race
			// detector on a busy machine took past 300 ms, and the reason
			// shown was that timeout); the follower's clock is moved past
			// LostAfter only once the poll's reason is in.
			f, clk := followClock(t, c.addr, c.mod)
			v := waitView(t, f, "the fleet over", func(v View) bool {
				if strings.Contains(byAddr(v, c.addr).LastErr, c.want) {
					clk.pastLostAfter()
				}
				return v.Done
			})
			a := byAddr(v, c.addr)
			t.Logf("%s: %s: %s", c.name, a.Status, a.Why)
			if a.Status != "unreachable" || !strings.Contains(a.Why, c.want) {
				t.Errorf("%s: %s (%s), want unreachable for %q", c.name, a.Status, a.Why, c.want)
			}
			if line := noResultsWhy(v.Agents); !strings.Contains(line, c.want) {
				t.Errorf("the summary line says no reason: %s", line)
			}
		})
	}
}

// TestNoRedirect: no redirect of an agent's is followed: its /result,
// /seconds and /control pointing at another port (the same host, where
// Go's client would keep the token) reach nothing there.
func TestNoRedirect(t *testing.T) {
	var reached atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) }))
	defer elsewhere.Close()
	a := newFake(t, testToken, state(0, 1), result(t, 10, 5, 0))
	a.srv.Config.Handler = redirecting(a.srv.Config.Handler, elsewhere.URL)
	f := follow(t, a.addr(), nil)
	waitView(t, f, "the agent running", func(v View) bool { return byAddr(v, a.addr()).HasState })
	f.Send(agent.Control{Seq: 1, WindowMS: 60_000}, time.Time{})
	// Its seconds refused, then 20 views more: its seconds, results and
	// the control asked for, tried poll after poll, counted in the
	// follower's steps, not in the 400 ms a busy machine may spend on
	// none.
	v := waitView(t, f, "its seconds refused", func(v View) bool { return byAddr(v, a.addr()).SecondsErr != "" })
	for range 20 {
		seq := v.Seq
		v = waitView(t, f, "a view more", func(v View) bool { return v.Seq > seq })
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("%d requests followed a redirect to another port", n)
	}
	if ag := byAddr(v, a.addr()); !strings.Contains(ag.SecondsErr, "redirect") {
		t.Errorf("its seconds refused for %q, want a redirect named", ag.SecondsErr)
	}
}

// redirecting is h with /result, /seconds and /control redirected to
// to (307: a POST keeps its body).
func redirecting(h http.Handler, to string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/state" {
			h.ServeHTTP(w, r)
			return
		}
		http.Redirect(w, r, to+r.URL.Path, http.StatusTemporaryRedirect)
	})
}

// TestTokenLineBreak: a token with a line break inside is refused at
// the start, by name and without itself: Go would refuse every request.
func TestTokenLineBreak(t *testing.T) {
	src, err := discover.ParseSource("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(Config{Source: src, Token: []byte("0123456789\nsecret-part")})
	if err == nil || !strings.Contains(err.Error(), "line break") || strings.Contains(err.Error(), "secret") {
		t.Errorf("a token of two lines: %v", err)
	}
}

// TestSeqNoWrap: an agent saying it took control 2^64-1 is refused by
// name; the follower's count does not wrap, and its controls (a gate's
// finish among them) still reach the honest agent.
func TestSeqNoWrap(t *testing.T) {
	honest := newAgent(t, 0, 2, testWhole, time.Now(), result(t, 4, 3, 0))
	st := state(1, 2)
	whole := agent.KnobsOf(testWhole)
	st.Whole, st.ControlSeq = &whole, math.MaxUint64
	hostile := newFake(t, testToken, st, result(t, 4, 3, 0))
	f := follow(t, honest.addr()+","+hostile.addr(), nil)
	s := NewMerging(f, nil)
	defer s.Stop()
	waitSnap(t, s, "the whole knobs known", func(sn load.Snapshot) bool { return sn.Knobs.Concurrency == 8 })
	waitView(t, f, "both agents' states", func(v View) bool { return byAddr(v, honest.addr()).HasState && byAddr(v, hostile.addr()).HasState })
	time.Sleep(50 * time.Millisecond) // the merge's controller has seen them
	s.FinishAgents("a gate failed")
	v := waitView(t, f, "the finish at the honest agent", func(v View) bool { a := byAddr(v, honest.addr()); return a.State.ControlSeq >= 1 || v.Done })
	if a := byAddr(v, hostile.addr()); a.Status != report.AgentRefused || !strings.Contains(a.Why, "control seq") {
		t.Errorf("the agent at seq 2^64-1: %s (%s)", a.Status, a.Why)
	}
	if out, _ := f.control(); out.c.Seq == 0 || !out.c.Finish {
		t.Errorf("the control sent: %+v", out.c)
	}
}

// heapPeak runs fn and returns the most the heap in use rose above its
// level before, sampled every few milliseconds.
func heapPeak(fn func()) uint64 {
	return peakOf(fn, func(m *runtime.MemStats) uint64 { return m.HeapInuse })
}

// memPeak is heapPeak with the goroutines' stacks counted too.
func memPeak(fn func()) uint64 {
	return peakOf(fn, func(m *runtime.MemStats) uint64 { return m.HeapInuse + m.StackInuse })
}

// peakOf runs fn and returns the most what (of the runtime's memory
// statistics) rose above its level before, sampled every few
// milliseconds.
func peakOf(fn func(), what func(*runtime.MemStats) uint64) uint64 {
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	base := what(&before)
	var top atomic.Uint64
	quit, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			var now runtime.MemStats
			runtime.ReadMemStats(&now)
			if v := what(&now); v > base && v-base > top.Load() {
				top.Store(v - base)
			}
			select {
			case <-quit:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	fn()
	close(quit)
	<-sampled
	return top.Load()
}

// TestResultBounded: an agent's endless /result costs the follower a
// bounded read, refused by name; a result padded with what no result
// holds is merged and kept without its padding.
func TestResultBounded(t *testing.T) {
	endless := newFake(t, testToken, state(0, 2), nil)
	endless.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/result" {
			agentHandler(endless).ServeHTTP(w, r)
			return
		}
		w.Write([]byte(`{"infertop":{"pad":"`))
		chunk := []byte(strings.Repeat("x", 1<<16))
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	honest := result(t, 10, 5, 0)
	// 10 MB of padding in strings of 1 KB: a string past a result's
	// longest (report.MaxStringBytes) refuses the result whole.
	var padding strings.Builder
	for i := range 10 << 10 {
		fmt.Fprintf(&padding, `"p%d":"%s",`, i, strings.Repeat("p", 1000))
	}
	padded := append([]byte(`{"padding":{`+strings.TrimSuffix(padding.String(), ",")+`},`), honest[1:]...)
	pad := newFake(t, testToken, state(1, 2), padded)
	var v View
	peak := heapPeak(func() {
		f := follow(t, endless.addr()+","+pad.addr(), func(c *Config) { c.Timeout, c.LostAfter = 5*time.Second, 20*time.Second }) // 32 MB read
		v = waitView(t, f, "the endless result refused", func(v View) bool {
			return strings.Contains(byAddr(v, endless.addr()).Why, "past") && byAddr(v, pad.addr()).Result != nil
		})
		f.Stop()
	})
	t.Logf("an endless /result: %d MB of heap at the peak; %s", peak>>20, byAddr(v, endless.addr()).Why)
	// The promise is 200 MB for any hostile case; the peak of the heap
	// in use counts garbage the collector has not yet taken, and moves
	// with the machine (84 MB quiet, 171 MB in a busy CI run, against
	// 700-860 MB before the bound).
	if peak > 200<<20 {
		t.Errorf("an endless /result: %d MB of heap", peak>>20)
	}
	a := byAddr(v, pad.addr())
	if n := len(a.Raw); n == 0 || n > 1<<20 || strings.Contains(string(a.Raw), "ppp") {
		t.Errorf("the padded result kept: %d bytes", n)
	}
	var top map[string]json.RawMessage // a whole result: vLLM's keys beside infertop's
	if err := json.Unmarshal(a.Raw, &top); err != nil || top["sent"] == nil || top["infertop"] == nil || top["padding"] != nil {
		t.Errorf("the result kept: %v, keys %d", err, len(top))
	}
}

// agentHandler is f's agent.Handler, as newFake serves it.
func agentHandler(f *fake) http.Handler {
	return agent.NewHandler([]byte(testToken), func() agent.State {
		f.mu.Lock()
		defer f.mu.Unlock()
		s := f.st
		s.Now = time.Now()
		return s
	}, nil, nil)
}

// TestStartsAtEveryPoll: an agent saying its load started again at
// every poll keeps at most maxRestarts runs, is refused past them, and
// its one result is merged once.
func TestStartsAtEveryPoll(t *testing.T) {
	a := newFake(t, testToken, state(0, 1), result(t, 10, 5, 0))
	a.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.set(func(s *agent.State) { s.Started = s.Started.Add(time.Millisecond) }) // a new start at every request
		agentHandler(a).ServeHTTP(w, r)
	})
	a.srv.Config.Handler = withResult(a, a.srv.Config.Handler)
	f := follow(t, a.addr(), nil)
	refused := func(v View) string { // its runs share its address: the live one's word
		for _, ag := range v.Agents {
			if ag.Status == report.AgentRefused {
				return ag.Why
			}
		}
		return ""
	}
	waitView(t, f, "the agent refused", func(v View) bool { return refused(v) != "" })
	time.Sleep(300 * time.Millisecond) // some 15 polls more
	v := f.Latest()
	t.Logf("%d runs kept: %s", len(v.Agents), refused(v))
	if len(v.Agents) > maxRestarts+1 {
		t.Errorf("%d runs kept of one agent", len(v.Agents))
	}
	m, err := Merge(v)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Result.Run.Sent; got != 10 {
		t.Errorf("sent %d, want its one result's 10 (refused: %q)", got, m.Result.Merged.Refused)
	}
}

// withResult is h with f's /result served (agentHandler serves none).
func withResult(f *fake, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/result" {
			h.ServeHTTP(w, r)
			return
		}
		f.mu.Lock()
		res, final := f.res, f.st.Final
		f.mu.Unlock()
		if final {
			w.Header().Set(agent.ResultHeader, agent.ResultFinal)
		}
		w.Write(res)
	})
}

// TestHostileResultRefused: an agent whose result the merge cannot take
// (70 objectives) is refused by name, and the honest agent's figures
// are merged.
func TestHostileResultRefused(t *testing.T) {
	honest := newFake(t, testToken, state(0, 2), result(t, 10, 5, 0))
	var f report.File
	if err := json.Unmarshal(result(t, 30, 9, 0), &f); err != nil {
		t.Fatal(err)
	}
	for i := range 70 {
		f.Infertop.SLO = append(f.Infertop.SLO, report.VerdictJSON{Expr: fmt.Sprintf("ttft_p99 <= %dms", i+1)})
	}
	bad, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	hostile := newFake(t, testToken, state(1, 2), bad)
	fl, clk := followClock(t, honest.addr()+","+hostile.addr(), nil)
	waitView(t, fl, "the hostile agent refused", func(v View) bool { return byAddr(v, hostile.addr()).Status == report.AgentRefused })
	honest.set(func(s *agent.State) { s.Final, s.Done = true, true })
	// Its index missing, the fleet is over LostAfter after the honest
	// agent's end.
	v := waitView(t, fl, "the fleet over", func(v View) bool {
		if byAddr(v, honest.addr()).Status == report.AgentDone {
			clk.pastLostAfter()
		}
		return v.Done
	})
	if a := byAddr(v, hostile.addr()); !strings.Contains(a.Why, "70 objectives") {
		t.Errorf("refused for %q", a.Why)
	}
	m, err := Merge(v)
	if err != nil {
		t.Fatal(err)
	}
	if m.Result.Run.Sent != 10 {
		t.Errorf("merged sent %d, want the honest agent's 10", m.Result.Run.Sent)
	}
}

// TestTwoOfOneIndexAtTheEnd: two agents of one index, the later refused
// while both run, stay one share at the end: the earlier's last word
// merged, the other's not.
func TestTwoOfOneIndexAtTheEnd(t *testing.T) {
	first := newFake(t, testToken, state(0, 1), result(t, 76, 5, 0))
	later := state(0, 1)
	later.Started = time.Now()
	second := newFake(t, testToken, later, result(t, 76, 6, 0))
	f := follow(t, first.addr()+","+second.addr(), nil)
	waitView(t, f, "the later refused", func(v View) bool { return byAddr(v, second.addr()).Status == report.AgentRefused })
	first.set(func(s *agent.State) { s.Final, s.Done = true, true })
	waitView(t, f, "the first done", func(v View) bool { return byAddr(v, first.addr()).Status == report.AgentDone })
	second.set(func(s *agent.State) { s.Final, s.Done = true, true })
	v := waitView(t, f, "the fleet over", func(v View) bool { return v.Done })
	m, err := Merge(v)
	if err != nil {
		t.Fatal(err)
	}
	if m.Result.Run.Sent != 76 {
		t.Errorf("sent %d for one share of 76 (%s: %s)", m.Result.Run.Sent, byAddr(v, second.addr()).Status, byAddr(v, second.addr()).Why)
	}
}

// TestFinalWithoutResult: an agent that says its run is over and answers
// /result with 500 is lost after LostAfter, with why; the follow ends.
func TestFinalWithoutResult(t *testing.T) {
	st := state(0, 1)
	st.Final, st.Done = true, true
	a := newFake(t, testToken, st, nil)
	a.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/result" {
			http.Error(w, "no", http.StatusInternalServerError)
			return
		}
		agentHandler(a).ServeHTTP(w, r)
	})
	f := follow(t, a.addr(), func(c *Config) { c.Timeout, c.LostAfter = 500*time.Millisecond, 600*time.Millisecond })
	v := waitView(t, f, "the fleet over", func(v View) bool { return v.Done })
	if ag := byAddr(v, a.addr()); ag.Status != report.AgentLost || !strings.Contains(ag.Why, "HTTP 500") {
		t.Errorf("%s: %s", ag.Status, ag.Why)
	}
}
