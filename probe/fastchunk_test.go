package probe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valyala/fastjson"
)

// fullParse is parse without the fast path: the reference.
func fullParse(data []byte) (chunkInfo, error) {
	var p fastjson.Parser
	return (&openaiProto{chat: true, stream: true}).parseFull(&p, data)
}

// agree checks that the fast path, where it answers, says what the full
// parser says.
func agree(t *testing.T, data []byte) (fast bool) {
	t.Helper()
	got, ok := fastChunk(data)
	if !ok {
		return false
	}
	want, err := fullParse(data)
	if err != nil {
		t.Fatalf("fast path accepted %q, the full parser: %v", data, err)
	}
	if got.output != want.output || got.choices != want.choices || got.finished != want.finished ||
		got.done != want.done || string(got.id) != string(want.id) || got.usage != nil || want.usage != nil ||
		got.errMsg != nil || want.errMsg != nil {
		t.Fatalf("%q: fast %+v, full %+v", data, got, want)
	}
	return true
}

func TestFastChunk(t *testing.T) {
	fast := []string{
		`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}],"usage":null}`,
		` {"choices":[{"delta":{"role":"assistant","content":""}}]} `,
		`{"choices":[{"delta":{"reasoning_content":"hm"},"finish_reason":null}]}`,
		`{"choices":[{"text":"x","finish_reason":"stop","stop_reason":null}]}`,
		`{"choices":[{"delta":{},"finish_reason":"length"}],"extra":[1,-2.5e+3,true,false,null,{"a":"\u00e9\n"}]}`,
		`{"choices":[]}`, `{}`, `{"choices":null}`,
		`{"id":"a","id":"b","choices":[{"delta":{"content":"\"q\""}},{"delta":{"content":null}}]}`,
	}
	for _, s := range fast {
		if !agree(t, []byte(s)) {
			t.Errorf("fast path gave up on %s", s)
		}
	}
	slow := []string{
		`{"object":"error","message":"boom","code":500}`,
		`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
		`{"error":{"message":"x"}}`,
		`{"choices":[{"delta":{"cont\u0065nt":"x"}}]}`,
		`{"id":"a\"b","choices":[]}`,
		`{"choices":[{"delta":{"content":"x"}}]`, `{"choices":[{"delta":{"content":"x"}}]}x`,
		`{"a":01}`, `{"a":1.}`, `{"a":"\x"}`, "{\"a\":\"\x01\"}", `[]`, `null`, ``, `{"a" 1}`,
		`{"a":[` + strings.Repeat("[", 20) + strings.Repeat("]", 20) + `]}`,
	}
	for _, s := range slow {
		if agree(t, []byte(s)) {
			t.Errorf("fast path answered %s", s)
		}
	}
}

// FuzzFastChunk: wherever the fast path answers, the full parser accepts
// the message and reads the same.
func FuzzFastChunk(f *testing.F) {
	for _, dir := range []string{"testdata/vllm-sim", "testdata/written", "testdata/llamacpp"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.body"))
		for _, file := range files {
			b, _ := os.ReadFile(file)
			for _, line := range strings.Split(string(b), "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok {
					f.Add([]byte(d))
				}
			}
		}
	}
	f.Add([]byte(`{"choices":[{"delta":{"content":"a"},"finish_reason":null}],"usage":null}`))
	f.Fuzz(func(t *testing.T, data []byte) { agree(t, data) })
}
