package probe

import (
	"context"
	"fmt"
	"testing"

	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

// TestAPIsAgainstSim: every new kind, streamed and not, with and without
// reasoning, against the sim, its figures held to the sim's own record
// of each request: the counts equal, TTFT and TTFO at or after the
// server wrote them, the reasoning apart.
func TestAPIsAgainstSim(t *testing.T) {
	for _, reasoning := range []int{0, 5} {
		p, _ := sim.Preset("fast")
		p.Reasoning = sim.Reasoning{Tokens: reasoning}
		ss := simtest.Start(t, p)
		for _, tc := range []struct {
			kind     Kind
			noStream bool
			batch    int
		}{
			{OpenAIResponses, false, 0}, {OpenAIResponses, true, 0}, {Anthropic, false, 0}, {Anthropic, true, 0},
			{OpenAIChat, false, 0}, {OpenAIChat, true, 0},
			{OpenAIEmbeddings, false, 1}, {OpenAIEmbeddings, false, 4}, {OllamaEmbed, false, 3},
		} {
			name := fmt.Sprintf("%s/nostream=%v/batch=%d/reasoning=%d", tc.kind, tc.noStream, tc.batch, reasoning)
			url, _ := EndpointURL(tc.kind, ss.URL, !tc.noStream)
			c, err := New(Config{URL: url, Model: p.Model, API: tc.kind, NoStream: tc.noStream, APIKey: "sk-test-key-123", Body: BodyOptions{Batch: tc.batch}})
			if err != nil {
				t.Fatal(err)
			}
			res := c.Do(context.Background(), Request{Prompt: "tell me about the river and the sea", MaxTokens: 12})
			c.Close()
			recs := ss.Sim.Records()
			rec := recs[len(recs)-1]
			if !res.OK() {
				t.Errorf("%s: %v %s", name, res.Class, res.Err)
				continue
			}
			if res.InputTokens != rec.PromptTokens || res.OutputTokens != rec.OutputTokens || res.InputEstimated || res.OutputEstimated {
				t.Errorf("%s: in %d out %d (est %v %v), the sim %d %d", name, res.InputTokens, res.OutputTokens, res.InputEstimated, res.OutputEstimated, rec.PromptTokens, rec.OutputTokens)
			}
			if tc.kind.Embeds() {
				if res.Inputs != max(tc.batch, 1) || rec.Inputs != res.Inputs || res.HasTTFT || res.OutputTokens != 0 {
					t.Errorf("%s: %d inputs (the sim %d), TTFT %v, out %d", name, res.Inputs, rec.Inputs, res.HasTTFT, res.OutputTokens)
				}
				continue
			}
			wantReasoning := reasoning
			if tc.noStream && tc.kind == Anthropic {
				wantReasoning = 0 // its usage does not split them, and a whole answer has one message
			}
			if res.ReasoningTokens != wantReasoning || rec.ReasoningTokens != reasoning || res.AnswerTokens() != 12-wantReasoning {
				t.Errorf("%s: reasoning %d (the sim %d), answer %d", name, res.ReasoningTokens, rec.ReasoningTokens, res.AnswerTokens())
			}
			if tc.noStream {
				if res.HasTTFT || res.HasTTFO {
					t.Errorf("%s: TTFT %v TTFO %v on a whole answer", name, res.HasTTFT, res.HasTTFO)
				}
				continue
			}
			if !res.HasTTFT || !res.HasTTFO || res.HasTTFR != (reasoning > 0) || res.Messages != 12 || res.ReasoningMessages != reasoning {
				t.Errorf("%s: TTFT %v TTFO %v TTFR %v, %d messages, %d reasoning", name, res.HasTTFT, res.HasTTFO, res.HasTTFR, res.Messages, res.ReasoningMessages)
				continue
			}
			// The client's clock starts before the request is written,
			// the sim's after its headers are read: the client's times
			// are the longer.
			if res.TTFT < rec.TTFT() || res.TTFO < rec.TTFO() || res.E2E < rec.E2E() {
				t.Errorf("%s: TTFT %v TTFO %v E2E %v, the sim's %v %v %v", name, res.TTFT, res.TTFO, res.E2E, rec.TTFT(), rec.TTFO(), rec.E2E())
			}
			if reasoning > 0 && (res.TTFO <= res.TTFT || rec.TTFO() <= rec.TTFT()) {
				t.Errorf("%s: TTFO %v not after TTFT %v (the sim %v %v)", name, res.TTFO, res.TTFT, rec.TTFO(), rec.TTFT())
			}
		}
	}
}
