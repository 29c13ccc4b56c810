package sim

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
)

// eventTypes lists a stream's event: names, checking each names its
// JSON's type.
func eventTypes(t *testing.T, body string) []string {
	t.Helper()
	var names []string
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
			continue
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			var v struct{ Type string }
			if err := json.Unmarshal([]byte(d), &v); err != nil || v.Type != name {
				t.Fatalf("event %q: type %q (%v) in %s", name, v.Type, err, d)
			}
			names = append(names, name)
		}
	}
	return names
}

// TestAPIShapes: the Responses, Messages and embeddings endpoints answer
// in their APIs' shapes, reasoning first, and refuse as those APIs do.
func TestAPIShapes(t *testing.T) {
	p, _ := Preset("fast")
	p.Reasoning = Reasoning{Tokens: 2}
	_, base := startSim(t, p)
	apiPost := func(url, body string) (int, string) {
		resp, b := post(t, url, body)
		return resp.StatusCode, b
	}
	m := `"model":"sim-llama-8b"`

	code, body := apiPost(base+"/v1/responses", `{`+m+`,"input":"hi there","instructions":"be brief","max_output_tokens":5,"stream":true}`)
	got := strings.Join(eventTypes(t, body), " ")
	want := "response.created response.in_progress response.output_item.added response.reasoning_text.delta response.reasoning_text.delta " +
		"response.output_item.added response.content_part.added response.output_text.delta response.output_text.delta response.output_text.delta response.completed"
	if code != 200 || got != want || !strings.Contains(body, `"output_tokens":5,"output_tokens_details":{"reasoning_tokens":2}`) || !strings.Contains(body, `"input_tokens":4`) {
		t.Errorf("responses: %d\n%s\nwant\n%s\n%s", code, got, want, body)
	}

	code, body = apiPost(base+"/v1/messages", `{`+m+`,"system":"be brief","messages":[{"role":"user","content":"hi there"}],"max_tokens":4,"stream":true}`)
	got = strings.Join(eventTypes(t, body), " ")
	want = "message_start ping content_block_start content_block_delta content_block_delta content_block_stop content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if code != 200 || got != want || !strings.Contains(body, `"thinking_delta"`) || !strings.Contains(body, `"usage":{"input_tokens":4,"output_tokens":4}`) {
		t.Errorf("messages: %d\n%s\nwant\n%s\n%s", code, got, want, body)
	}
	code, body = apiPost(base+"/v1/messages", `{`+m+`,"messages":[{"role":"user","content":"hi"}]}`)
	if code != 400 || !strings.Contains(body, `"type":"error"`) || !strings.Contains(body, "invalid_request_error") {
		t.Errorf("messages without max_tokens: %d %s", code, body)
	}
	code, body = apiPost(base+"/v1/messages", `{"model":"nope","messages":[{"role":"user","content":"hi"}],"max_tokens":4}`)
	if code != 404 || !strings.Contains(body, "not_found_error") {
		t.Errorf("messages, unknown model: %d %s", code, body)
	}

	code, body = apiPost(base+"/v1/embeddings", `{`+m+`,"input":["a b","c d e"]}`)
	var e struct {
		Data []struct {
			Embedding []float64
			Index     int
		}
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(body), &e); code != 200 || err != nil || len(e.Data) != 2 || len(e.Data[1].Embedding) != embedDims || e.Data[1].Index != 1 || e.Usage.PromptTokens != 5 {
		t.Errorf("embeddings: %d %v %s", code, err, body[:min(len(body), 300)])
	}
	code, body = apiPost(base+"/api/embed", `{`+m+`,"input":"a b"}`)
	var o struct {
		Embeddings [][]float64
		Count      int `json:"prompt_eval_count"`
	}
	if err := json.Unmarshal([]byte(body), &o); code != 200 || err != nil || len(o.Embeddings) != 1 || o.Count != 2 {
		t.Errorf("api/embed: %d %v %s", code, err, body[:min(len(body), 300)])
	}
	code, body = apiPost(base+"/api/embed", `{"model":"nope","input":"a"}`)
	if code != 404 || !strings.HasPrefix(body, `{"error":"`) {
		t.Errorf("api/embed, unknown model: %d %s", code, body)
	}
}

// TestParseReasoning reads counts, fractions and percentages.
func TestParseReasoning(t *testing.T) {
	for in, want := range map[string]Reasoning{"64": {Tokens: 64}, "0.5": {Fraction: 0.5}, "25%": {Fraction: 0.25}} {
		if got, err := ParseReasoning(in); err != nil || got != want {
			t.Errorf("%s: %+v %v", in, got, err)
		}
	}
	for _, bad := range []string{"x", "1.5.2", "%"} {
		if _, err := ParseReasoning(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if (Reasoning{Fraction: 1}).validate() == nil || (Reasoning{Tokens: -1}).validate() == nil {
		t.Error("a fraction of 1 or a negative count passed")
	}
	if n := (Reasoning{Tokens: 10}).of(4); n != 3 {
		t.Errorf("10 of 4 tokens: %d, want 3 (one left for the answer)", n)
	}
}
