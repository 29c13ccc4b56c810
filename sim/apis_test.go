package sim

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
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
	want := "response.created response.in_progress response.output_item.added response.content_part.added response.reasoning_text.delta response.reasoning_text.delta " +
		"response.reasoning_text.done response.content_part.done response.output_item.done " +
		"response.output_item.added response.content_part.added response.output_text.delta response.output_text.delta response.output_text.delta " +
		"response.output_text.done response.content_part.done response.output_item.done response.completed"
	if code != 200 || got != want || !strings.Contains(body, `"output_tokens":5,"output_tokens_details":{"reasoning_tokens":2}`) || !strings.Contains(body, `"input_tokens":4`) {
		t.Errorf("responses: %d\n%s\nwant\n%s\n%s", code, got, want, body)
	}
	checkCompleted(t, body)

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

// checkCompleted holds a Responses stream's response.completed to what
// its deltas said: an output item per part, each with the whole text its
// deltas made (the OpenAI SDKs' finalResponse() is that object), and
// each *.done event to the same text.
func checkCompleted(t *testing.T, body string) {
	t.Helper()
	var completed struct {
		Response struct {
			Output []struct {
				Type    string
				Content []struct{ Type, Text string }
			}
		}
	}
	deltas := map[string]string{} // by the part's type
	done := map[string]string{}
	for _, line := range strings.Split(body, "\n") {
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct{ Type, Delta, Text string }
		if err := json.Unmarshal([]byte(d), &ev); err != nil {
			t.Fatal(err)
		}
		switch ev.Type {
		case "response.output_text.delta", "response.reasoning_text.delta":
			deltas[strings.TrimSuffix(ev.Type, ".delta")] += ev.Delta
		case "response.output_text.done", "response.reasoning_text.done":
			done[strings.TrimSuffix(ev.Type, ".done")] = ev.Text
		case "response.completed":
			if err := json.Unmarshal([]byte(d), &completed); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := map[string]string{}
	for _, o := range completed.Response.Output {
		if len(o.Content) != 1 {
			t.Fatalf("output item %s has %d parts", o.Type, len(o.Content))
		}
		got["response."+o.Content[0].Type] = o.Content[0].Text
	}
	if len(deltas) == 0 || len(got) != len(deltas) {
		t.Fatalf("completed output %v, deltas %v", got, deltas)
	}
	for k, v := range deltas {
		if got[k] != v || done[k] != v || v == "" {
			t.Errorf("%s: deltas %q, done %q, completed %q", k, v, done[k], got[k])
		}
	}
}

// TestResponsesFollowOllama: without reasoning the sim's Responses
// stream has the events of Ollama's, in its order (testdata: Ollama
// v0.24.0's bytes, as probe's testdata has them), the deltas of one token
// each; and its
// response.completed holds the whole output, as Ollama's does.
func TestResponsesFollowOllama(t *testing.T) {
	rec, err := os.ReadFile("testdata/ollama-responses-stream.body")
	if err != nil {
		t.Fatal(err)
	}
	collapse := func(names []string) string { // a run of deltas as one
		var out []string
		for _, n := range names {
			if len(out) > 0 && out[len(out)-1] == n && strings.HasSuffix(n, ".delta") {
				continue
			}
			out = append(out, n)
		}
		return strings.Join(out, " ")
	}
	want := collapse(eventTypes(t, string(rec)))
	checkCompleted(t, string(rec))
	p, _ := Preset("fast")
	_, base := startSim(t, p)
	resp, body := post(t, base+"/v1/responses", `{"model":"sim-llama-8b","input":"hi there","max_output_tokens":16,"stream":true}`)
	if got := collapse(eventTypes(t, body)); resp.StatusCode != 200 || got != want {
		t.Fatalf("sim: %d\n%s\nOllama:\n%s", resp.StatusCode, got, want)
	}
	checkCompleted(t, body)
}

// TestEmbeddingsBase64: encoding_format "base64" (the OpenAI SDKs'
// default) answers each vector as the base64 of its little-endian
// float32s, the same unit vector the float answer holds (it got 16 zero
// floats and no error); a format neither float nor base64 is refused.
func TestEmbeddingsBase64(t *testing.T) {
	p, _ := Preset("fast")
	_, base := startSim(t, p)
	type answer struct {
		Data []struct {
			Embedding json.RawMessage
		}
	}
	get := func(format string) (int, answer) {
		resp, body := post(t, base+"/v1/embeddings", `{"model":"sim-llama-8b","input":"a b"`+format+`}`)
		var a answer
		if resp.StatusCode == 200 {
			if err := json.Unmarshal([]byte(body), &a); err != nil || len(a.Data) != 1 {
				t.Fatalf("%s: %v %s", format, err, body)
			}
		}
		return resp.StatusCode, a
	}
	code, b64 := get(`,"encoding_format":"base64"`)
	var str string
	if err := json.Unmarshal(b64.Data[0].Embedding, &str); code != 200 || err != nil {
		t.Fatalf("base64: %d %v %s", code, err, b64.Data[0].Embedding)
	}
	decode := func(s string) []float32 {
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(raw) != 4*embedDims {
			t.Fatalf("base64: %d bytes, %v", len(raw), err)
		}
		out := make([]float32, embedDims)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		return out
	}
	got := decode(str)
	// The same vector as the float form of the same seed.
	var want []float32
	if err := json.Unmarshal(appendVector(nil, 7, false), &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(appendVector(nil, 7, true), &str); err != nil {
		t.Fatal(err)
	}
	for i, v := range decode(str) {
		if math.Abs(float64(v-want[i])) > 1e-6 {
			t.Fatalf("dimension %d: base64 %v, float %v", i, v, want[i])
		}
	}
	norm := 0.0
	for _, v := range got {
		norm += float64(v) * float64(v)
	}
	if math.Abs(norm-1) > 1e-5 {
		t.Fatalf("base64 vector's norm² %v, want 1", norm)
	}
	if code, _ := get(`,"encoding_format":"int8"`); code != 400 {
		t.Fatalf("encoding_format int8: %d, want 400", code)
	}
}
