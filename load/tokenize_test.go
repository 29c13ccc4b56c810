package load

import (
	"context"
	"testing"
	"time"

	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
)

// TestTokenizerCalibration: calibrated through the sim's /tokenize,
// prompts asked for 1,024 tokens are 1,024 ± 1 % of the sim's tokens on
// average from the first request on, each within 3 % (its own words'
// lengths; the text alone: the chat template's tokens aside), and
// the run says how it was calibrated. A server without a tokenizer
// leaves the calibration to the usage, in one line.
func TestTokenizerCalibration(t *testing.T) {
	t.Parallel()
	p, _ := sim.Preset("fast")
	r := startRig(t, p, Knobs{Concurrency: 2, PromptTokens: 1024, OutputTokens: 2}, func(c *Config) {
		c.MaxRequests = 8
		client, err := probe.New(probe.Config{URL: c.Target.URL + "/v1/chat/completions", Model: p.Model})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(client.Close)
		c.ByTokenizer, c.Tokenize = true, client.Tokenize
	})
	s := waitFor(t, r.eng, 10*time.Second, "the end of the run", func(s Snapshot) bool { return s.Done && s.InFlight == 0 })
	r.stop()
	if s.Calibration == "" || s.Run.Completed != 8 {
		t.Fatalf("calibration %q, %d completed", s.Calibration, s.Run.Completed)
	}
	recs := r.sim.Records()
	sum := 0
	for i, rec := range recs {
		text := rec.PromptTokens - p.ChatOverhead
		sum += text
		if text < 993 || text > 1055 {
			t.Errorf("request %d: %d tokens of text for 1024 asked", i, text)
		}
	}
	mean := float64(sum) / float64(len(recs))
	t.Logf("%s: a mean of %.1f tokens of text for 1024 asked", s.Calibration, mean)
	if mean < 1013.76 || mean > 1034.24 {
		t.Errorf("a mean of %.1f tokens of text for 1024 asked", mean)
	}

	e, err := New(Config{Do: func(context.Context, probe.Request) probe.Result { return probe.Result{} }, Knobs: Knobs{Concurrency: 1, PromptTokens: 64, OutputTokens: 1},
		ByTokenizer: true, Tokenize: func(context.Context, string) (int, error) { return 0, probe.ErrNoTokenize }})
	if err != nil {
		t.Fatal(err)
	}
	note, ok := e.tokenizerNote(context.Background())
	if ok || note != "prompts calibrated from the server's usage (/tokenize: not offered by this server)" || e.cal.n != 0 {
		t.Fatalf("without a tokenizer: %q %v, %d observations", note, ok, e.cal.n)
	}
}
