package probe

import (
	"bytes"
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/infertop/infertop/sim"
)

// TestServerTimingsAgainstSim: asked for, the sim's per-request metrics
// are its own record (the queue and the TTFT to the microsecond it
// writes), and the client's TTFT splits into connection, queue, prefill
// and a rest that is never negative: the server's TTFT fits inside the
// client's. Not asked for, none come.
func TestServerTimingsAgainstSim(t *testing.T) {
	p, _ := sim.Preset("fast")
	p.Slots = 2 // six at once: some wait in the sim's queue
	ss, c := simClient(t, p, Config{ServerTimings: true})
	const n = 12
	results := make([]Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			results[i] = c.Do(context.Background(), Request{Prompt: "the river and the sea", MaxTokens: 8})
		})
	}
	wg.Wait()
	ss.Close()
	byTrace := map[string]sim.Record{}
	for _, r := range ss.Sim.Records() {
		byTrace[r.TraceID] = r
	}
	var gaps []time.Duration
	queued := 0
	for i, res := range results {
		rec, found := byTrace[res.Trace.ID()]
		sv := res.Server
		if !res.OK() || !found || !sv.HasQueue || !sv.HasTTFT || !sv.HasGeneration || !sv.HasMeanITL || !sv.HasCached {
			t.Fatalf("request %d: %v %s, record %v, server timings %+v", i, res.Class, res.Err, found, sv)
		}
		if want := rec.FirstToken.Sub(rec.Arrived); absDiff(sv.TTFT, want) > time.Microsecond {
			t.Errorf("request %d: the server's TTFT %v, its record's %v", i, sv.TTFT, want)
		}
		if want := rec.Admitted.Sub(rec.Arrived); absDiff(sv.Queue, want) > time.Microsecond {
			t.Errorf("request %d: the server's queue %v, its record's %v", i, sv.Queue, want)
		}
		if sv.CachedTokens != rec.CachedTokens {
			t.Errorf("request %d: cached %d, the record's %d", i, sv.CachedTokens, rec.CachedTokens)
		}
		if sv.Queue > 0 {
			queued++
		}
		s, ok := res.SplitTTFT()
		if !ok || s.Connection+s.Queue+s.Prefill+s.Rest != res.TTFT || s.Rest < 0 || s.Gap < s.Connection {
			t.Errorf("request %d: TTFT %v split %+v (ok %v)", i, res.TTFT, s, ok)
		}
		gaps = append(gaps, s.Gap)
	}
	if queued == 0 {
		t.Error("no request waited in the sim's queue: the split's queue went untested")
	}
	slices.Sort(gaps)
	t.Logf("the client-server TTFT gap: p50 %v, max %v", gaps[n/2], gaps[n-1])

	// Not asked for: no metrics.
	_, c2 := simClient(t, p, Config{})
	if res := c2.Do(context.Background(), Request{Prompt: "x", MaxTokens: 2}); !res.OK() || res.Server.Any() {
		t.Fatalf("unasked: %v, server timings %+v", res.Class, res.Server)
	}
}

func absDiff(a, b time.Duration) time.Duration { return max(a-b, b-a) }

// TestAskServerTimings: the OpenAI kinds (the default's too) are asked,
// a user's own value stays, another API is not asked.
func TestAskServerTimings(t *testing.T) {
	if e := AskServerTimings("", nil); e["include_metrics"] != true {
		t.Errorf("the default API: %v", e)
	}
	if e := AskServerTimings(OpenAICompletions, map[string]any{"include_metrics": false}); e["include_metrics"] != false {
		t.Errorf("the user's own value: %v", e)
	}
	if e := AskServerTimings(Anthropic, nil); e != nil {
		t.Errorf("another API: %v", e)
	}
}

// TestServerTimingsLlamaCpp: llama-server's recorded answers give their
// prompt and generation times (its timings, sent unasked), streamed and
// whole, and the split takes the prompt time for the prefill.
func TestServerTimingsLlamaCpp(t *testing.T) {
	for _, tc := range []struct {
		file              string
		prompt, predicted time.Duration
	}{
		{"chat-stream-usage.body", 18229 * time.Microsecond, 6349 * time.Microsecond},
		{"chat-nostream.body", 1909 * time.Microsecond, 3001 * time.Microsecond},
	} {
		body, err := os.ReadFile("/work/shared/fixtures/llamacpp/" + tc.file)
		if err != nil {
			t.Skipf("no recording: %v", err)
		}
		var st ServerTimings
		if tc.file == "chat-nostream.body" {
			readServerTimings(nil, body, &st)
		} else {
			for _, ev := range splitEvents(body) {
				if mayCarryTimings(ev) {
					readServerTimings(nil, ev, &st)
				}
			}
		}
		if !st.HasPrefill || absDiff(st.Prefill, tc.prompt) > time.Microsecond || !st.HasGeneration || absDiff(st.Generation, tc.predicted) > time.Microsecond || st.HasQueue {
			t.Errorf("%s: %+v", tc.file, st)
		}
		r := Result{HasTTFT: true, TTFT: 30 * time.Millisecond, Server: st}
		if s, ok := r.SplitTTFT(); !ok || s.Prefill != st.Prefill || s.Queue != 0 || s.Rest != r.TTFT-st.Prefill {
			t.Errorf("%s: split %+v %v", tc.file, s, ok)
		}
	}
}

// TestServerTimingsUntrusted: figures no server could mean are left
// unknown, the others of their message kept, and a message that does not
// decode adds nothing.
func TestServerTimingsUntrusted(t *testing.T) {
	var st ServerTimings
	readServerTimings(nil, []byte(`{"metrics":{"queue_time_ms":-5,"time_to_first_token_ms":1e300,"mean_itl_ms":2},"usage":{"prompt_tokens_details":{"cached_tokens":1.5}}}`), &st)
	readServerTimings(nil, []byte(`{"timings":`), &st)
	readServerTimings(nil, []byte(`{"metrics":{"generation_time_ms":"x","queue_time_ms":1}}`), &st)
	if st.Queue != time.Millisecond || st.HasTTFT || st.HasGeneration || st.HasCached || !st.HasMeanITL || st.MeanITL != 2*time.Millisecond {
		t.Fatalf("%+v", st)
	}
	if _, ok := (&Result{HasTTFT: true, Server: st}).SplitTTFT(); ok {
		t.Fatal("a split without the server's prefill")
	}
}

// TestServerTimingsSpecDecode: vLLM's per-request speculative decoding
// counts (the documented shape of --per-request-spec-decode-metrics
// summary, on a stream's usage chunk) are read; counts no server could
// mean (more accepted than drafted, fractions, negatives) are not.
func TestServerTimingsSpecDecode(t *testing.T) {
	var st ServerTimings
	chunk := `{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":11742,"completion_tokens":35,"prompt_tokens_details":{"cached_tokens":0}},` +
		`"metrics":{"speculative_decoding":{"mean_acceptance_length":1.2325581395348837,"draft_acceptance_rate":0.07751937984496124,"acceptance_histogram":[39,1,0,3],"num_spec_steps":43,"num_accepted_draft_tokens":10,"num_draft_tokens":129,"num_spec_tokens":3}}}`
	if !mayCarryTimings([]byte(chunk)) {
		t.Fatal("the metrics chunk is not looked at")
	}
	readServerTimings(nil, []byte(chunk), &st)
	if !st.HasSpec || st.SpecAccepted != 10 || st.SpecDrafted != 129 || !st.HasCached || !st.Any() {
		t.Fatalf("%+v", st)
	}
	for _, bad := range []string{
		`{"metrics":{"speculative_decoding":{"num_accepted_draft_tokens":130,"num_draft_tokens":129}}}`,
		`{"metrics":{"speculative_decoding":{"num_accepted_draft_tokens":1.5,"num_draft_tokens":129}}}`,
		`{"metrics":{"speculative_decoding":{"num_accepted_draft_tokens":-1,"num_draft_tokens":129}}}`,
		`{"metrics":{"speculative_decoding":{"num_draft_tokens":129}}}`,
		`{"metrics":{"speculative_decoding":[10,129]}}`,
	} {
		var st ServerTimings
		readServerTimings(nil, []byte(bad), &st)
		if st.HasSpec {
			t.Errorf("%s: read as %d of %d", bad, st.SpecAccepted, st.SpecDrafted)
		}
	}
}

// splitEvents returns the data of each SSE event of body.
func splitEvents(body []byte) [][]byte {
	r := NewSSEReader(bytes.NewReader(body))
	var out [][]byte
	for {
		ev, err := r.Next()
		if err != nil {
			return out
		}
		out = append(out, append([]byte(nil), ev.Data...))
	}
}
