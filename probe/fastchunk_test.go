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
	got, ok := fastChunk(data, nil)
	if !ok {
		return false
	}
	want, err := fullParse(data)
	if err != nil {
		t.Fatalf("fast path accepted %q, the full parser: %v", data, err)
	}
	if got.output != want.output || got.choices != want.choices || got.finished != want.finished ||
		got.done != want.done || string(got.id) != string(want.id) || got.usage != nil || want.usage != nil ||
		got.reasoning != want.reasoning || got.answer != want.answer ||
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
	for _, dir := range []string{"testdata/vllm-sim", "testdata/written", "testdata/llamacpp", "testdata/ollama"} {
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

// FuzzFastChunkMemo: a chunk read after another, from what the first
// taught, reads as it does alone.
func FuzzFastChunkMemo(f *testing.F) {
	rec, err := os.ReadFile("testdata/vllm-sim/chat-stream-usage.body")
	if err != nil {
		f.Fatal(err)
	}
	var msgs []string
	for _, line := range strings.Split(string(rec), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			msgs = append(msgs, d)
		}
	}
	for i := 1; i < len(msgs); i++ {
		f.Add([]byte(msgs[i-1]), []byte(msgs[i]))
	}
	f.Add([]byte(`{"id":"a","choices":[]}`), []byte(`{"id":"a","choices":[],"id":"b"}`))
	f.Fuzz(func(t *testing.T, first, second []byte) {
		var memo chunkMemo
		fastChunk(first, &memo)
		got, gotOK := fastChunk(second, &memo)
		want, wantOK := fastChunk(second, nil)
		if gotOK != wantOK || (gotOK && (got.output != want.output || got.choices != want.choices ||
			got.finished != want.finished || string(got.id) != string(want.id) ||
			got.answer != want.answer || got.reasoning != want.reasoning)) {
			t.Fatalf("after %q, %q: with memory %v %+v, alone %v %+v", first, second, gotOK, got, wantOK, want)
		}
	})
}

// TestFastChunkMemoIsUsed: the second chunk of a recorded stream is read
// from the memory.
func TestFastChunkMemoIsUsed(t *testing.T) {
	a := []byte(`{"id":"x1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"a"}}]}`)
	b := []byte(`{"id":"x1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"bc"},"finish_reason":"stop"}]}`)
	var memo chunkMemo
	if _, ok := fastChunk(a, &memo); !ok || !memo.valid || string(memo.prefix) != string(a[:strings.Index(string(a), "[")]) {
		t.Fatalf("memo %+v", memo)
	}
	// Break the remembered prefix's JSON in place: only a scan from the
	// memory can still accept the chunk.
	broken := append([]byte(nil), b...)
	info, ok := fastChunk(broken, &memo)
	if !ok || !info.output || !info.finished || string(info.id) != "x1" {
		t.Fatalf("%v %+v", ok, info)
	}
	copy(memo.prefix[5:], "!!")
	copy(broken[5:], "!!")
	if _, ok := fastChunk(broken, &memo); !ok {
		t.Fatal("the chunk was scanned from its start: the memory was not used")
	}
}
