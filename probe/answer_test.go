package probe

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

// simAnswer is the answer's text the sim wrote for rec: every word after
// the reasoning's, each after a space.
func simAnswer(rec sim.Record) string {
	var b strings.Builder
	for i := rec.ReasoningTokens; i < rec.OutputTokens; i++ {
		b.WriteString(" " + sim.Word(rec.ID, i))
	}
	return b.String()
}

// TestAnswerTextAgainstSim: a request that asks for its answer's text gets
// exactly the text the sim wrote, streamed or whole, with the reasoning
// left out, in every API the sim speaks; a request that does not ask
// gets nothing kept.
func TestAnswerTextAgainstSim(t *testing.T) {
	for _, reasoning := range []int{0, 4} {
		p, _ := sim.Preset("fast")
		p.Reasoning = sim.Reasoning{Tokens: reasoning}
		ss := simtest.Start(t, p)
		for _, tc := range []struct {
			kind     Kind
			noStream bool
		}{
			{OpenAIChat, false}, {OpenAIChat, true}, {OpenAICompletions, false}, {OpenAICompletions, true},
			{OpenAIResponses, false}, {OpenAIResponses, true}, {Anthropic, false}, {Anthropic, true}, {Generic, true},
		} {
			name := fmt.Sprintf("%s/nostream=%v/reasoning=%d", tc.kind, tc.noStream, reasoning)
			url, _ := EndpointURL(tc.kind, ss.URL, !tc.noStream)
			if tc.kind == Generic {
				url = ss.Origin + "/v1/infer"
			}
			c, err := New(Config{URL: url, Model: p.Model, API: tc.kind, NoStream: tc.noStream})
			if err != nil {
				t.Fatal(err)
			}
			ans := &AnswerText{}
			ans.add([]byte("left from the last request"))
			res := c.Do(context.Background(), Request{Messages: []Message{{Role: "user", Content: "hello"}, {Role: "assistant", Content: " the sea"}, {Role: "user", Content: "and then?"}}, MaxTokens: 10, Answer: ans})
			c.Close()
			recs := ss.Sim.Records()
			rec := recs[len(recs)-1]
			if !res.OK() {
				t.Errorf("%s: %v %s", name, res.Class, res.Err)
				continue
			}
			want := simAnswer(rec)
			if tc.kind == OpenAICompletions || tc.kind == Generic {
				want = simAnswer(sim.Record{ID: rec.ID, OutputTokens: rec.OutputTokens}) // no reasoning apart there
			}
			if got := ans.String(); got != want || ans.Truncated() || want == "" {
				t.Errorf("%s: answer %q, the sim wrote %q", name, got, want)
			}
		}
	}
}

// TestAnswerTextRecorded: Ollama's and TGI's recorded answers, the
// thinking and the special end token left out.
func TestAnswerTextRecorded(t *testing.T) {
	for _, tc := range []struct {
		fixture, want string
		kind          Kind
		noStream      bool
	}{
		{"written/ollama/chat-stream-thinking", "Hi!", Ollama, false},
		{"written/tgi/generate-stream", " Deep learning is", TGI, false},
		{"written/tgi/generate", " Deep learning is", TGI, true},
	} {
		srv := fixtureServer(t, tc.fixture, 0)
		c, err := New(Config{URL: srv.URL + "/api/chat", Model: "m", API: tc.kind, NoStream: tc.noStream})
		if err != nil {
			t.Fatal(err)
		}
		ans := &AnswerText{}
		res := c.Do(context.Background(), Request{Prompt: "hi", MaxTokens: 8, Answer: ans})
		c.Close()
		if !res.OK() || ans.String() != tc.want {
			t.Errorf("%s: %v %s, answer %q, want %q", tc.fixture, res.Class, res.Err, ans.String(), tc.want)
		}
	}
}

// The cap: the text stops at Max bytes, never in the middle of a
// character, and says it was cut.
func TestAnswerTextCapped(t *testing.T) {
	a := &AnswerText{Max: 10}
	a.add([]byte("abcdefgh"))
	a.add([]byte("é and more"))
	if a.String() != "abcdefghé" || !a.Truncated() || a.Len() != 10 {
		t.Errorf("%q (%d bytes) truncated %v", a.String(), a.Len(), a.Truncated())
	}
	a = &AnswerText{Max: 9}
	a.add([]byte("abcdefgh"))
	a.add([]byte("é"))
	if a.String() != "abcdefgh" || !a.Truncated() || !utf8.ValidString(a.String()) {
		t.Errorf("%q truncated %v", a.String(), a.Truncated())
	}
	a.add([]byte("x"))
	if a.String() != "abcdefgh" {
		t.Errorf("text added after the cut: %q", a.String())
	}
	a.Reset()
	if a.Len() != 0 || a.Truncated() {
		t.Errorf("after Reset: %q %v", a.String(), a.Truncated())
	}
}

// BenchmarkReadStreamAnswer is BenchmarkReadStream's stream read by a
// request that keeps its answer's text (a session's turn): the cost of the
// second read of each message, paid by such requests only.
func BenchmarkReadStreamAnswer(b *testing.B) {
	payload := []byte(benchStream(b))
	c, _ := New(Config{URL: "http://127.0.0.1:1/v1/chat/completions"})
	live := &Live{Origin: time.Now()}
	live.Reserve(256)
	ans := &AnswerText{}
	b.ReportAllocs()
	for b.Loop() {
		res := Result{Start: time.Now()}
		live.Begin(res.Start)
		ans.Reset()
		c.readStream(context.Background(), bytes.NewReader(payload), frameSSE, &res, Request{MaxTokens: 200, Live: live, Answer: ans})
		if !res.OK() || res.Messages != 200 || ans.Len() == 0 {
			b.Fatalf("%d messages, %v, %d bytes of answer", res.Messages, res.Err, ans.Len())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*200), "ns/msg")
}

// FuzzAnswerText: any message, in any protocol, adds at most the cap and
// never panics; a whole answer too.
func FuzzAnswerText(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"index":0,"delta":{"content":" hello"}}]}`, `{"choices":[{"text":" w"}]}`,
		`{"message":{"content":"Hi"},"done":false}`, `{"token":{"text":" Deep","special":false}}`,
		`{"type":"response.output_text.delta","delta":" x"}`, `{"type":"content_block_delta","delta":{"type":"text_delta","text":"é"}}`,
		`{"output":"the sea"}`, `[{"generated_text":"a"}]`, `{"choices":[null]}`, `{"type":"message","content":[{"type":"text","text":"t"}]}`,
	} {
		for kind := range 7 {
			f.Add(uint8(kind), false, []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, whole bool, data []byte) {
		protos := []protocol{&openaiProto{chat: true, stream: true}, &openaiProto{stream: true}, &ollamaProto{chat: true, stream: true},
			&tgiProto{stream: !whole}, &responsesProto{stream: !whole}, &anthropicProto{stream: !whole},
			&genericProto{opts: GenericOptions{OutputPath: "output", Stream: "none"}}}
		a := &AnswerText{Max: 16}
		for range 3 {
			a.take(protos[int(kind)%len(protos)], data, whole)
		}
		if a.Len() > 16 {
			t.Fatalf("%d bytes kept past a cap of 16", a.Len())
		}
	})
}
