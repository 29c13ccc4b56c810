package promsource

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/infertop/infertop/tools/promtest"
)

// TestRealPrometheus: Debian's Prometheus scraping two servers (the
// vLLM exposition recorded from the sim, a counter without _total and a
// summary beside), each under its version label: what Get reads through
// its API is what a direct scrape parses, grouped by version. Skipped
// without a prometheus binary (apt-get install prometheus).
func TestRealPrometheus(t *testing.T) {
	e, err := os.ReadFile("../telemetry/testdata/vllm-sim.txt")
	if err != nil {
		t.Fatal(err)
	}
	expo := string(e) + extra
	var targets []string
	for range 2 {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			_, _ = w.Write([]byte(expo))
		}))
		defer srv.Close()
		targets = append(targets, srv.Listener.Addr().String())
	}
	base := promtest.Start(t, fmt.Sprintf(`  - job_name: vllm
    static_configs:
      - targets: [%q]
        labels: {version: stable}
      - targets: [%q]
        labels: {version: canary}
`, targets[0], targets[1]))

	want := text(t, parse(t, expo))
	s, err := New(Config{URL: base, Match: `{job="vllm"}`, By: "version", Names: names(parse(t, expo))})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]Server
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got, err = s.Get(ctx)
		cancel()
		// Metadata comes with the first scrape: until then the gauges are
		// untyped, and a new Source asks again.
		if err == nil && len(got) == 2 && text(t, got[targets[0]].Families) == want && text(t, got[targets[1]].Families) == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s: %d servers (%v); the first:\n%s\nwant\n%s", len(got), err, text(t, got[targets[0]].Families), want)
		}
		s, _ = New(Config{URL: base, Match: `{job="vllm"}`, By: "version", Names: names(parse(t, expo))})
	}
	if got[targets[0]].Group != "stable" || got[targets[1]].Group != "canary" {
		t.Errorf("groups %q and %q", got[targets[0]].Group, got[targets[1]].Group)
	}
}
