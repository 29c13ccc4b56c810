package engines

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestSimReadsAsVLLM: the embedded sim's /metrics, after a few requests,
// reads as a vLLM server with every request counted, and parses as
// Prometheus' own parser reads it (one TYPE line a family).
func TestSimReadsAsVLLM(t *testing.T) {
	p, err := sim.Preset("fast")
	if err != nil {
		t.Fatal(err)
	}
	srv := simtest.Start(t, p)
	const n = 3
	for range n {
		body := `{"model":"sim-llama-8b","max_tokens":4,"messages":[{"role":"user","content":"hello there"}]}`
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.ChatURL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	page := func() *http.Response {
		req, _ := http.NewRequestWithContext(context.WithoutCancel(t.Context()), http.MethodGet, srv.Origin+"/metrics", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	r, err := Parse(page().Body)
	if err != nil {
		t.Fatal(err)
	}
	if r.Engine != "vllm" || r.Requests != has(n) || r.Aborted != has(0) || !r.PromptTokens.Has || r.GenTokens != has(n*4) ||
		!r.CachedPromptTokens.Has || !r.Running.Has || !r.KVUsage.Has || r.TTFT.Total() != n || r.E2E.Total() != n {
		t.Errorf("the sim's page: %+v", r)
	}
	tp := expfmt.NewTextParser(model.UTF8Validation)
	if _, err := tp.TextToMetricFamilies(page().Body); err != nil {
		t.Errorf("Prometheus' parser: %v", err)
	}
}
