package probe

import (
	"encoding/json"
	"testing"
)

// TestEncodeBodyMatchesJSON: the bodies infertop builds are encoding/json's,
// byte for byte.
func TestEncodeBodyMatchesJSON(t *testing.T) {
	for _, s := range []string{"", "plain words", `quote " back \ slash`, "<tag> & amp", "tab\tnew\nline\r\x00\x1f\x7f",
		"é ü 日本 🙂", "bad \xff utf-8 \xc3", "line\u2028sep\u2029", "\b\f"} {
		same(t, map[string]any{"model": "m", "prompt": s, "max_tokens": 7, "stream": true,
			"messages": []Message{{Role: "user", Content: s}}, "stream_options": map[string]bool{"include_usage": true},
			"temperature": 0.7, "extra": []any{1, "x", nil}})
	}
}

func same(t *testing.T, m map[string]any) {
	t.Helper()
	got, err := encodeBody(m)
	want, werr := json.Marshal(m)
	if err != nil || werr != nil || string(got) != string(want) {
		t.Fatalf("encodeBody:\n%s (%v)\njson.Marshal:\n%s (%v)", got, err, want, werr)
	}
}

func FuzzEncodeBody(f *testing.F) {
	f.Add("hello", "user", 5, true)
	f.Add("<\xff\u2028\"\\\n", "", -1, false)
	f.Fuzz(func(t *testing.T, s, role string, n int, flag bool) {
		same(t, map[string]any{s: n, "k" + role: flag, "prompt": s, "messages": []Message{{Role: role, Content: s}}})
	})
}

func BenchmarkBody(b *testing.B) {
	proto, _ := newProtocol(&Config{API: OpenAIChat, URL: "http://h/"})
	req := Request{Prompt: string(make([]byte, 0, 1)) + "the quick brown fox jumps over the lazy dog, again and again, " +
		"until the prompt is a few hundred bytes long, as the default prompt of 256 tokens is", MaxTokens: 128}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := proto.body("sim-llama-8b", req); err != nil {
			b.Fatal(err)
		}
	}
}
