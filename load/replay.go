package load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/infertop/infertop/probe"
)

// EndTrace is why a replay that does not loop ended.
const EndTrace = "the trace ended"

// The trace's speed knob (Knobs.Speed) within these.
const (
	MinSpeed = 0.01
	MaxSpeed = 1000
)

// TraceStatus is where a replay is, as a snapshot shows it. The zero
// value is no replay.
type TraceStatus struct {
	// On is true during a replay; Name and Format say what is replayed.
	On           bool
	Name, Format string
	// Speed is the replay's speed (1: the trace's own time).
	Speed float64
	// Position is the trace time reached in this pass, of Span.
	Position, Span time.Duration
	// Pass counts the passes finished (a looped trace); Sent the arrivals
	// sent in this pass, of Total.
	Pass, Sent, Total int
	// Behind is how late the replay is now: the oldest arrival due and not
	// yet sent (the dispatcher's lag, the backlog's wait). MaxBehind is the
	// most it has been since the start (a reset does not clear it: it is
	// the replay's, not the figures').
	Behind, MaxBehind time.Duration
	// Skipped and Filtered are the trace's rows left out (Trace).
	Skipped, Filtered int
	// Prompt and Output are the length knobs' values the trace's lengths
	// scale from (the knob at twice this, twice the trace's lengths).
	Prompt, Output int
}

// FallingBehind reports whether the replay is late enough to say so:
// arrivals the client could not send when they were due are load the
// trace asked for and the server did not get then.
func (s TraceStatus) FallingBehind() bool { return s.On && s.Behind > BehindNotice }

// BehindNotice is the lag past which a replay is said to fall behind: a
// timer's and a scheduler's few milliseconds are not.
const BehindNotice = 100 * time.Millisecond

// Summary is the replay in one line, for the end of a run.
func (s TraceStatus) Summary() string {
	if !s.On {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "trace %s (%s), %s× speed: %d arrivals", s.Name, s.Format, strconvSpeed(s.Speed), s.Pass*s.Total+s.Sent)
	round := time.Second
	if s.Span < time.Minute {
		round = 10 * time.Millisecond
	}
	if s.Pass > 0 {
		passes := "passes"
		if s.Pass == 1 { // "1 passes" read as a slip
			passes = "pass"
		}
		fmt.Fprintf(&b, " over %d %s of %v", s.Pass, passes, s.Span.Round(round))
	} else {
		fmt.Fprintf(&b, " of %d, at %v of %v", s.Total, s.Position.Round(round), s.Span.Round(round))
	}
	if s.MaxBehind > BehindNotice {
		fmt.Fprintf(&b, "; fell behind, up to %v late", s.MaxBehind.Round(time.Millisecond))
	} else {
		fmt.Fprintf(&b, "; kept up (at most %v late)", s.MaxBehind.Round(time.Millisecond))
	}
	if s.Skipped > 0 {
		fmt.Fprintf(&b, "; %d failed rows skipped", s.Skipped)
	}
	return b.String()
}

func strconvSpeed(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}

// replay is the engine's state of a trace replay: the trace, the lengths
// the knobs scale from, and the dispatcher's position, behind mu.
type replay struct {
	tr             *Trace
	prompt, output int     // the knobs' lengths at the start: a knob at twice this doubles the trace's
	rate           float64 // the trace's mean arrivals per second at 1×
	seed           uint64
	mu             sync.Mutex
	w0             time.Time     // the wall time the trace was at p0
	p0             time.Duration // trace time (of this pass) at w0
	speed          float64
	paused         bool
	pass, sent     int
	due            time.Time // the next arrival's intended time, zero when none is due yet
	maxBehind      time.Duration
}

// prepareTrace makes a configuration with a trace what a replay runs on:
// the open loop, at the speed asked (1 when none), the lengths' knobs
// at the trace's means (the keys scale from there), the rate its mean.
func (c *Config) prepareTrace() error {
	t := c.Trace
	if t == nil {
		c.Knobs.Speed = 0
		return nil
	}
	switch {
	case len(t.Entries) == 0:
		return &SettingError{SettingTrace, errors.New("no requests in the trace")}
	case c.Dataset != nil:
		return &SettingError{SettingTrace, errors.New("a trace gives the prompts: it does not go with a dataset")}
	case len(c.Stages) > 0:
		return &SettingError{SettingTrace, errors.New("a trace sets the load: it does not go with stages or a ramp")}
	case c.Knobs.Speed != 0 && !(c.Knobs.Speed >= MinSpeed && c.Knobs.Speed <= MaxSpeed):
		return &SettingError{SettingTrace, fmt.Errorf("the speed %v is not within %v..%v", c.Knobs.Speed, MinSpeed, MaxSpeed)}
	}
	if c.Knobs.Speed == 0 {
		c.Knobs.Speed = 1
	}
	in, out, rate := t.means()
	c.Knobs.Mode = OpenLoop
	c.Knobs.PromptTokens = min(max(in, 1), MaxPromptTokens)
	c.Knobs.OutputTokens = min(max(out, 1), MaxOutputTokens)
	c.Knobs.Rate = min(max(rate*c.Knobs.Speed, MinRate), MaxRate)
	c.PromptLength, c.OutputLength = Length{}, Length{}
	return nil
}

// newReplay is the replay of c's trace (nil without one); c has been
// through prepareTrace.
func newReplay(c *Config) *replay {
	if c.Trace == nil {
		return nil
	}
	_, _, rate := c.Trace.means()
	seed := c.Seed
	if w := c.Trace.whole; w != nil { // a share's blocks are the whole's
		seed = w.seed
	}
	return &replay{tr: c.Trace, prompt: c.Knobs.PromptTokens, output: c.Knobs.OutputTokens, rate: rate, seed: seed, speed: c.Knobs.Speed, paused: true}
}

// holdTraceLocked keeps the knobs a replay's: the open loop (o does not
// apply), a speed within its limits, the rate the speed makes.
func (e *Engine) holdTraceLocked(k *Knobs) {
	r := e.replay
	if r == nil {
		k.Speed = 0
		return
	}
	k.Mode = OpenLoop
	if k.Speed <= 0 {
		k.Speed = e.knobs.Speed
	}
	k.Speed = min(max(k.Speed, MinSpeed), MaxSpeed)
	k.Rate = min(max(r.rate*k.Speed, MinRate), MaxRate)
}

// position is the trace time of this pass at now.
func (r *replay) position(now time.Time) time.Duration {
	if r.paused || r.w0.IsZero() {
		return r.p0
	}
	return r.p0 + time.Duration(float64(now.Sub(r.w0))*r.speed)
}

// runReplay is the open loop of a replay: every arrival of the trace at
// its time (its offset divided by the speed knob), started at once or
// queued in the backlog as the open loop's are, latency counted from the
// intended time. A dispatcher that cannot keep up sends late arrivals at
// once, their intended times kept, and the lag is reported (TraceStatus),
// never silently absorbed.
func (e *Engine) runReplay(ctx context.Context) {
	r := e.replay
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	i := 0
	for {
		k, changed, stop := e.dispatching(ctx)
		if stop {
			return
		}
		now := time.Now()
		r.mu.Lock()
		switch {
		case k.Paused && !r.paused: // the trace's clock stops with the load
			r.p0, r.paused, r.due = r.position(now), true, time.Time{}
		case !k.Paused && (r.paused || k.Speed != r.speed): // re-anchored where it is
			r.p0 = r.position(now)
			r.w0, r.speed, r.paused = now, k.Speed, false
		}
		if k.Paused {
			r.mu.Unlock()
			select {
			case <-changed:
			case <-ctx.Done():
			}
			continue
		}
		if i == len(r.tr.Entries) {
			if !r.tr.Loop {
				r.mu.Unlock()
				e.mu.Lock()
				e.replayEnded = true
				e.replaySentLocked(time.Time{})
				e.mu.Unlock()
				e.poke()
				return
			}
			// The next pass starts at the end of this one's span.
			r.p0 -= r.tr.Span
			r.pass, r.sent, i = r.pass+1, 0, 0
		}
		en := &r.tr.Entries[i]
		intended := r.w0.Add(time.Duration(float64(en.At-r.p0) / r.speed))
		r.due = intended
		r.mu.Unlock()
		if wait := intended.Sub(now); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-changed:
				continue // the speed or the pause changed: look again
			case <-ctx.Done():
				return
			}
		}
		late := time.Since(intended)
		if !e.arrive(ctx, intended, en) {
			return
		}
		r.mu.Lock()
		r.maxBehind = max(r.maxBehind, late)
		r.sent++
		r.due = time.Time{}
		r.mu.Unlock()
		i++
	}
}

// replaySentLocked counts an arrival of the backlog sent now, intended
// then (zero: none), in how far behind the replay fell, and ends the run
// once a trace that does not loop has had every arrival sent: the last
// one dispatched, and the backlog empty (an arrival waiting there is
// still the trace's, sent late, never dropped).
func (e *Engine) replaySentLocked(intended time.Time) {
	r := e.replay
	if r == nil {
		return
	}
	if !intended.IsZero() {
		r.mu.Lock()
		r.maxBehind = max(r.maxBehind, time.Since(intended))
		r.mu.Unlock()
	}
	if e.replayEnded && e.backlogHead == len(e.backlog) {
		e.finishLocked(EndTrace)
	}
}

// traceStatus is the replay's status for a snapshot at now.
func (e *Engine) traceStatus() TraceStatus {
	r := e.replay
	if r == nil {
		return TraceStatus{}
	}
	now := time.Now()
	e.mu.Lock()
	var oldest time.Time
	if e.backlogHead < len(e.backlog) {
		oldest = e.backlog[e.backlogHead].intended
	}
	e.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	behind := time.Duration(0)
	if !r.due.IsZero() {
		behind = max(now.Sub(r.due), 0)
	}
	if !oldest.IsZero() {
		behind = max(behind, now.Sub(oldest))
	}
	r.maxBehind = max(r.maxBehind, behind)
	pos := min(max(r.position(now), 0), r.tr.Span)
	return TraceStatus{
		On: true, Name: r.tr.Name, Format: r.tr.Format, Speed: r.speed, Position: pos, Span: r.tr.Span,
		Pass: r.pass, Sent: r.sent, Total: len(r.tr.Entries), Behind: behind, MaxBehind: r.maxBehind,
		Skipped: r.tr.Skipped, Filtered: r.tr.Filtered, Prompt: r.prompt, Output: r.output,
	}
}

// traceRequest builds the request of a trace's arrival under the knobs
// k: its lengths scaled by the knobs against their values at the start,
// its prompt the trace's text, or its shared blocks then a tail of its
// own. words is the prompt's length in the generator's words (0 for the
// trace's own text, which the calibration then does not learn from).
func (e *Engine) traceRequest(en *TraceEntry, k Knobs) (req probe.Request, words, promptLen, outputLen int) {
	r := e.replay
	scale := func(n, knob, base int, most int) int {
		return min(max(int(math.Round(float64(n)*float64(knob)/float64(max(base, 1)))), 1), most)
	}
	promptLen = scale(en.Input, k.PromptTokens, r.prompt, MaxPromptTokens)
	outputLen = scale(en.Output, k.OutputTokens, r.output, MaxOutputTokens)
	if en.Prompt != "" {
		return probe.Request{Prompt: en.Prompt, MaxTokens: outputLen}, 0, en.Input, outputLen
	}
	words = promptLen
	if !e.cfg.NoCalibrate {
		words = e.cal.words(promptLen, e.promptLimit(outputLen))
	}
	if len(en.HashIDs) == 0 {
		return probe.Request{Prompt: e.prompts.Next(words), MaxTokens: outputLen}, words, promptLen, outputLen
	}
	// The shared blocks are fixed text: the calibration moves the tail only.
	full := min(len(en.HashIDs), promptLen/TraceBlockTokens)
	tail := max(words-full*TraceBlockTokens, 0)
	var b strings.Builder
	b.Grow((full*TraceBlockTokens + tail) * 6)
	for _, id := range en.HashIDs[:full] {
		blockText(&b, r.seed, id, TraceBlockTokens)
		b.WriteByte(' ')
	}
	if full < len(en.HashIDs) && tail > 0 { // a partial block named: its start, as another request's whole block
		part := min(tail, TraceBlockTokens)
		blockText(&b, r.seed, en.HashIDs[full], part)
		b.WriteByte(' ')
		tail -= part
	}
	if tail > 0 {
		b.WriteString(e.prompts.Next(tail))
	}
	return probe.Request{Prompt: strings.TrimSuffix(b.String(), " "), MaxTokens: outputLen}, max(words, full*TraceBlockTokens), promptLen, outputLen
}

// blockWordList are the words of a trace's shared blocks: short common
// words, one token each in the usual tokenizers (and the sim's).
var blockWordList = strings.Fields(`time year way day man thing life child world school state family group hand part
place case week work night point home water room area money story fact month lot right study book eye job word issue
side kind head house friend father power hour game line end member law car city name team minute idea kid body back
parent face level office door health person art war party result change reason girl guy moment air force order`)

// blockText writes the first words of the block named id: the same text
// for the same seed and id in every request, so no cache of texts is
// needed and requests sharing the id share its tokens.
func blockText(b *strings.Builder, seed uint64, id int64, words int) {
	x := seed ^ uint64(id)*0x9e3779b97f4a7c15 ^ 0xb10c
	for i := range words {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		z ^= z >> 31
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(blockWordList[z%uint64(len(blockWordList))])
	}
}
