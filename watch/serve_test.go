package watch

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestVerdictHandler: /verdict says the state in its JSON and its
// status (503 before any read, 200 undecided, 409 regressed), as Argo's
// web provider and Flagger's webhooks read them.
func TestVerdictHandler(t *testing.T) {
	t.Parallel()
	w, err := New(Config{Source: fleetOf(1, 1)})
	if err != nil {
		t.Fatal(err)
	}
	get := func() (int, Verdict) {
		rec := httptest.NewRecorder()
		w.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/verdict", nil))
		var v Verdict
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		return rec.Code, v
	}
	if code, v := get(); code != http.StatusServiceUnavailable || v.State != Unusable {
		t.Fatalf("before a read: %d %+v", code, v)
	}
	for _, c := range []struct {
		state string
		code  int
	}{{Undecided, 200}, {Held, 200}, {Regressed, 409}, {Unusable, 503}} {
		w.hub.Publish(Snapshot{Verdict: Verdict{State: c.state}})
		code, v := get()
		if code != c.code || v.State != c.state {
			t.Errorf("%s: %d %+v", c.state, code, v)
		}
	}
}

// TestHostileNames: a group named with terminal escapes (a pod's label
// is anyone's to set) reaches the verdict's line and the text only
// sanitised.
func TestHostileNames(t *testing.T) {
	t.Parallel()
	src := fleetOf(1, 1)
	for _, s := range src.servers[2:] {
		s.t.Group = "\x1b]0;owned\x07canary"
	}
	s := follow(t, Config{Source: src}, 3, func(Snapshot) bool { return false })
	var b strings.Builder
	if err := Text(&b, s); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(s.Verdict.Line+b.String(), 0x1b) || !strings.Contains(b.String(), `\x1b]0;owned`) {
		t.Fatalf("line %q\ntext:\n%s", s.Verdict.Line, b.String())
	}
}

// TestWatchMetrics: /metrics has each group's figures, the servers by
// state and the verdict, in the exposition format.
func TestWatchMetrics(t *testing.T) {
	t.Parallel()
	src := fleetOf(1.3, 1)
	w, err := New(Config{Source: src, Canary: "canary"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		obs, _ := src.Read(t.Context())
		w.fleet.observe(time.Now(), obs, nil)
	}
	snap := w.fleet.snapshot(time.Now(), time.Second, "fake")
	snap.Probe = &Probe{URL: "http://svc/v1", Rate: 0.2, Sent: 14, Completed: 12, Failed: 1, Incomplete: 1, WindowCompleted: 12, TTFTP50: 0.04, TTFTP99: 0.09, E2EP99: 0.4}
	w.hub.Publish(snap)
	rec := httptest.NewRecorder()
	w.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`infertop_watch_probe_ttft_seconds{quantile="0.99"} 0.09`,
		`infertop_watch_probe_requests_total{outcome="failed"} 1`,
		`infertop_watch_probe_in_flight 1`,
		`infertop_watch_group_requests_per_second{group="canary",role="canary"}`,
		`infertop_watch_servers{group="stable",state="up"} 2`,
		`infertop_watch_verdict{state="undecided"} 1`,
		`infertop_watch_group_ttft_p99_upper_seconds{group="stable",role="baseline"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
}

// TestHTML: the page holds the verdict, the groups' charts and the
// servers, and a hostile group's name only escaped.
func TestHTML(t *testing.T) {
	t.Parallel()
	src := fleetOf(1.3, 2)
	src.servers[0].t.Name = `<script>alert(1)</script>`
	w, err := New(Config{Source: src, Canary: "canary"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := range 5 {
		obs, _ := src.Read(t.Context())
		w.fleet.observe(now.Add(time.Duration(i)*time.Second), obs, nil)
		w.fleet.remember(w.fleet.snapshot(now.Add(time.Duration(i)*time.Second), time.Duration(i)*time.Second, "fake"))
	}
	var b strings.Builder
	if err := HTML(&b, w.fleet.snapshot(now.Add(5*time.Second), 5*time.Second, "fake"), w.fleet.history); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, "<script>") || !strings.Contains(page, "&lt;script&gt;") {
		t.Errorf("a server's name reached the page unescaped")
	}
	if strings.Count(page, "<polyline") != 4 || !strings.Contains(page, "canary") {
		t.Errorf("want two charts of two groups:\n%s", page)
	}
}
