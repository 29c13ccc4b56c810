package fleet

import (
	"crypto/x509"
	"io"
	"log"
	"math"
	"sync/atomic"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestUnreachableSaysWhy: an agent that never answers in a way the
// follower takes is unreachable with its reason, whatever stopped it.
func TestUnreachableSaysWhy(t *testing.T) {
	big := strings.Repeat(" ", MaxStateBytes+1)
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(tlsSrv.Certificate())
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer plain.Close()
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer elsewhere.Close()
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"version":"test"` + big + `}`)) }))
	defer huge.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusFound)
	}))
	defer redirect.Close()
	host := func(u string) string { return u[strings.Index(u, "//")+2:] }
	for _, c := range []struct {
		name, addr, want string
		mod              func(*Config)
	}{
		{"a name mismatch", host(tlsSrv.URL), "certificate", func(c *Config) { c.PlainLoopback, c.RootCAs, c.ServerName = false, pool, "agent.example" }},
		{"a self-signed certificate", host(tlsSrv.URL), "certificate", func(c *Config) { c.PlainLoopback = false }},
		{"TLS to a plain agent", host(plain.URL), "plain HTTP, not TLS", func(c *Config) { c.PlainLoopback = false }},
		{"a state past 64 KB", host(huge.URL), "past 65536 bytes", nil},
		{"a redirect", host(redirect.URL), "redirect", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := follow(t, c.addr, c.mod)
			v := waitView(t, f, "the fleet over", func(v View) bool { return v.Done })
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
	_ = time.Second
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
	time.Sleep(400 * time.Millisecond) // some 20 polls: seconds, results and the control asked for
	if n := reached.Load(); n != 0 {
		t.Errorf("%d requests followed a redirect to another port", n)
	}
	if ag := byAddr(f.Latest(), a.addr()); !strings.Contains(ag.SecondsErr, "redirect") {
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
	src, err := ParseSource("127.0.0.1:1")
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
