package probe

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// firstKeyJSON decodes data as encoding/json reads it, keeping the first
// of a repeated key as fastjson does, so the two parsers read the same
// document.
func firstKeyJSON(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := firstKeyValue(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errTrailing
	}
	return v, nil
}

var errTrailing = errors.New("data after the JSON value")

func firstKeyValue(d *json.Decoder) (any, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		m := map[string]any{}
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return nil, err
			}
			v, err := firstKeyValue(d)
			if err != nil {
				return nil, err
			}
			if _, dup := m[k.(string)]; !dup {
				m[k.(string)] = v
			}
		}
		_, err := d.Token()
		return m, err
	case json.Delim('['):
		var a []any
		for d.More() {
			v, err := firstKeyValue(d)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := d.Token()
		return a, err
	}
	return tok, nil
}

// refGet walks an object path in a decoded document.
func refGet(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func refStr(v any, path ...string) string { s, _ := refGet(v, path...).(string); return s }

// refInfo is what the Responses or Anthropic parser should say of one
// event, read with encoding/json: text of each kind, the end, an error.
func refInfo(kind Kind, v any) (reasoning, answer, finished, failed bool) {
	typ := refStr(v, "type")
	if kind == Anthropic {
		block := func(b any) {
			switch refStr(b, "type") {
			case "text", "text_delta":
				answer = answer || refStr(b, "text") != ""
			case "input_json_delta":
				answer = answer || refStr(b, "partial_json") != ""
			case "thinking", "thinking_delta":
				reasoning = reasoning || refStr(b, "thinking") != ""
			}
		}
		switch typ {
		case "content_block_start":
			block(refGet(v, "content_block"))
		case "content_block_delta":
			block(refGet(v, "delta"))
		case "message_stop":
			finished = true
		case "message":
			blocks, _ := refGet(v, "content").([]any)
			for _, b := range blocks {
				block(b)
			}
			finished = true
		case "error":
			failed = true
		case "":
			e := refGet(v, "error")
			failed = e != nil
		}
		return
	}
	switch typ {
	case "response.output_text.delta", "response.refusal.delta", "response.function_call_arguments.delta":
		answer = refStr(v, "delta") != ""
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta", "response.reasoning.delta":
		reasoning = refStr(v, "delta") != ""
	case "response.completed", "response.incomplete", "response.failed":
		r := refGet(v, "response")
		switch refStr(r, "status") {
		case "completed":
			finished = true
		case "incomplete":
			finished = refStr(r, "incomplete_details", "reason") == "max_output_tokens"
			failed = !finished
		default:
			failed = true
		}
		if _, ok := r.(map[string]any); !ok {
			failed, finished = true, false
		}
	case "error":
		failed = true
	}
	return
}

// FuzzAPIEvents holds the Responses and Anthropic parsers (fastjson) to
// a reading of the same event with encoding/json: the same text of each
// kind, the same end, the same failure; never a panic, and a message
// neither can read as an object is refused.
func FuzzAPIEvents(f *testing.F) {
	for _, file := range []string{
		"ollama/openai-responses-stream.body", "ollama/anthropic-messages-stream.body",
		"written/responses/stream-reasoning.body", "written/responses/stream-failed.body",
		"written/responses/stream-incomplete-filter.body", "written/anthropic/stream-thinking.body",
		"written/anthropic/stream-error.body",
	} {
		b, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				f.Add(strings.Contains(file, "anthropic"), d)
			}
		}
	}
	f.Fuzz(func(t *testing.T, anthropic bool, data []byte) {
		kind, p := OpenAIResponses, protocol(&responsesProto{stream: true})
		if anthropic {
			kind, p = Anthropic, &anthropicProto{stream: true}
		}
		var ps parser
		info, err := p.parse(&ps, data)
		ref, rerr := firstKeyJSON(data)
		_, isObject := ref.(map[string]any)
		if isObject && kind == OpenAIResponses && refStr(ref, "type") == "" {
			return // a whole response, or no event: TestAPIFixtures
		}
		switch {
		case rerr == nil && isObject && err != nil:
			t.Fatalf("%q: refused (%v), encoding/json reads an object", data, err)
		case rerr != nil || !isObject:
			if err == nil && rerr != nil {
				t.Skip("the parsers disagree on the JSON itself")
			}
			if err == nil {
				t.Fatalf("%q: accepted, not an object", data)
			}
			return
		}
		if info.output != (info.reasoning || info.answer) {
			t.Fatalf("%q: output %v, reasoning %v, answer %v", data, info.output, info.reasoning, info.answer)
		}
		reasoning, answer, finished, failed := refInfo(kind, ref)
		if info.reasoning != reasoning || info.answer != answer || info.finished != finished || (info.errMsg != nil) != failed {
			t.Fatalf("%q: reasoning %v answer %v finished %v error %s; encoding/json: %v %v %v %v",
				data, info.reasoning, info.answer, info.finished, info.errMsg, reasoning, answer, finished, failed)
		}
	})
}

// FuzzEmbeddings: the embeddings parser never panics, counts a vector
// only where encoding/json sees one, and reads the usage it gives.
func FuzzEmbeddings(f *testing.F) {
	for _, file := range []string{"ollama/openai-embeddings-array.body", "ollama/openai-embeddings-base64.body", "ollama/embed-array.body"} {
		b, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(strings.Contains(file, "/embed"), b)
	}
	f.Add(false, []byte(`{"data":[{"embedding":[]}]}`))
	f.Fuzz(func(t *testing.T, native bool, data []byte) {
		var ps parser
		info, err := (&embedProto{native: native}).parse(&ps, data)
		ref, rerr := firstKeyJSON(data)
		if err != nil || rerr != nil || info.errMsg != nil {
			return
		}
		key := "data"
		if native {
			key = "embeddings"
		}
		vecs, _ := refGet(ref, key).([]any)
		if info.vectors != len(vecs) {
			t.Fatalf("%q: %d vectors, encoding/json sees %d", data, info.vectors, len(vecs))
		}
	})
}

// BenchmarkEmbeddingsHuge: one vector of 10^6 numbers (4 MB), the answer
// that held ~780 MB a request in flight through the full parser (issue
// 40, item 10). The bytes a parse allocates, and the parser's own heap
// left after it (retained, B/op of the last).
func BenchmarkEmbeddingsHuge(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"data":[{"embedding":[`)
	for i := range 1_000_000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString("0.1")
	}
	sb.WriteString(`]}],"usage":{"prompt_tokens":3,"total_tokens":3}}`)
	data := []byte(sb.String())
	e := &embedProto{opts: BodyOptions{}}
	var ps parser
	b.ReportAllocs()
	for b.Loop() {
		info, err := e.parse(&ps, data)
		if err != nil || info.vectors != 1 {
			b.Fatal(info, err)
		}
	}
}
