package probe

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

// TestGenericAgainstSim: a client script written for the sim's plain API
// (POST /v1/infer) sees the same figures infertop's generic kind does.
func TestGenericAgainstSim(t *testing.T) {
	p, _ := sim.Preset("fast")
	ss := simtest.Start(t, p)

	prompt := "tell me about the river and the sea in seven words"
	// The script: plain net/http and encoding/json.
	resp, err := http.Post(ss.URL+"/infer", "application/json",
		strings.NewReader(`{"model":"sim-llama-8b","input":"`+prompt+`","max_tokens":12}`))
	if err != nil {
		t.Fatal(err)
	}
	var script struct {
		Output       string `json:"output"`
		InputTokens  int    `json:"input_tokens"`
		OutputTokens int    `json:"output_tokens"`
	}
	err = json.NewDecoder(resp.Body).Decode(&script)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}

	url, _ := EndpointURL(Generic, ss.Origin, false)
	c, err := New(Config{URL: url, Model: "sim-llama-8b", API: Generic})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res := c.Do(context.Background(), Request{Prompt: prompt, MaxTokens: 12})
	if !res.OK() || res.HasTTFT {
		t.Fatalf("generic: %v %s (TTFT %v)", res.Class, res.Err, res.HasTTFT)
	}
	if res.InputTokens != script.InputTokens || res.OutputTokens != script.OutputTokens || res.OutputEstimated || script.OutputTokens != 12 {
		t.Fatalf("infertop in %d out %d (est %v); the script in %d out %d",
			res.InputTokens, res.OutputTokens, res.OutputEstimated, script.InputTokens, script.OutputTokens)
	}

	// The same sim through both OpenAI kinds, streamed and not.
	for _, tc := range []struct {
		kind     Kind
		noStream bool
	}{{OpenAIChat, false}, {OpenAIChat, true}, {OpenAICompletions, false}, {OpenAICompletions, true}} {
		url, _ := EndpointURL(tc.kind, ss.URL, !tc.noStream)
		c, err := New(Config{URL: url, Model: "sim-llama-8b", API: tc.kind, NoStream: tc.noStream})
		if err != nil {
			t.Fatal(err)
		}
		res := c.Do(context.Background(), Request{Prompt: prompt, MaxTokens: 12})
		c.Close()
		if !res.OK() || res.OutputTokens != 12 || res.HasTTFT == tc.noStream || (!tc.noStream && res.Messages != 12) {
			t.Errorf("%s no-stream=%v: %v %s, out %d, messages %d, TTFT %v", tc.kind, tc.noStream, res.Class, res.Err, res.OutputTokens, res.Messages, res.HasTTFT)
		}
	}
}

// TestConnectionsReused: every kind of answer leaves its connection for the
// next request (a stream, a whole answer, a 429), so no request but the
// first pays a TCP handshake inside its TTFT.
func TestConnectionsReused(t *testing.T) {
	p, _ := sim.Preset("fast")
	p.Faults.HTTP429 = 0.3
	ss := simtest.Start(t, p)
	for _, cfg := range []Config{
		{URL: ss.ChatURL, Model: p.Model},
		{URL: ss.URL + "/completions", Model: p.Model, NoStream: true},
	} {
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		reused, limited := 0, 0
		for range 40 {
			r := c.Do(context.Background(), Request{Prompt: "hi there", MaxTokens: 16})
			if r.ConnReused {
				reused++
			}
			if r.Class == HTTP429 {
				limited++
			}
		}
		c.Close()
		if reused < 39 || limited == 0 {
			t.Errorf("%s: %d of 40 requests on a reused connection (%d answered 429)", cfg.URL, reused, limited)
		}
	}
}

// TestStreamHeldOpenAfterDone: a server that keeps the stream open after
// [DONE] costs the worker at most the drain wait, and the answer counts.
func TestStreamHeldOpenAfterDone(t *testing.T) {
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hs.Close()
	defer close(release)
	const wait = 100 * time.Millisecond // not the default second
	c, _ := New(Config{URL: hs.URL + "/v1/chat/completions", Model: "m", DrainWait: wait})
	defer c.Close()
	t0 := time.Now()
	r := c.Do(context.Background(), Request{Prompt: "x", MaxTokens: 4})
	if took := time.Since(t0); !r.OK() || took < wait || took > wait+time.Second || r.E2E > 500*time.Millisecond {
		t.Fatalf("class %v (%s), Do took %v, E2E %v", r.Class, r.Err, took, r.E2E)
	}
}
