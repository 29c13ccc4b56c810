package load

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// tokenizeWait bounds the calibration through the server's tokenizer,
// all its requests together: a slow /tokenize must not hold the run's
// start for long.
const tokenizeWait = 10 * time.Second

// tokenizeSamples are the prompt lengths the tokenizer is asked to
// count, as shares of the prompt knob: around it, for the calibration's
// line, and at it thrice, for its noise.
var tokenizeSamples = [...]float64{0.5, 0.75, 1, 1, 1, 1.5, 2}

// calibrateByTokenizer asks the server's tokenizer (Config.Tokenize) to
// count prompts of the generator's words around the prompt knob, and
// seeds the calibration with its counts: the prompts are then their
// asked length in the server's own tokens from the first request, their
// text alone (usage's count adds a chat template's tokens). It returns
// the line the run's summary says of it, and whether it calibrated; a
// server without a tokenizer leaves the calibration to its usage.
func (e *Engine) calibrateByTokenizer(ctx context.Context) (note string, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, tokenizeWait)
	defer cancel()
	gen := NewPromptGen(e.cfg.Seed^0x70c3a11b, e.cfg.PrefixTokens).withPrefixSeed(e.cfg.PrefixSeed).withGroups(e.cfg.PrefixGroups)
	target := e.cfg.Knobs.PromptTokens
	for _, share := range tokenizeSamples {
		words := min(max(int(share*float64(target)), 8), MaxPromptTokens)
		n, err := e.cfg.Tokenize(ctx, gen.Next(words))
		if err != nil {
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				return "", false
			}
			return fmt.Sprintf("prompts calibrated from the server's usage (%v)", err), false
		}
		e.cal.observe(gen.words(words), n)
	}
	return "prompts calibrated by the server's tokenizer (/tokenize): their text is the asked length in its tokens", true
}

// tokenizerNote calibrates through the tokenizer where it is asked for
// (ByTokenizer), one is given, and
// the prompts are the generator's (not a dataset's, a trace's or a
// session's), and the calibration is on.
func (e *Engine) tokenizerNote(ctx context.Context) (string, bool) {
	if !e.cfg.ByTokenizer || e.cfg.Tokenize == nil || e.cfg.NoCalibrate || e.cfg.Dataset != nil || e.cfg.Trace != nil || e.cfg.Sessions.set() {
		return "", false
	}
	return e.calibrateByTokenizer(ctx)
}
