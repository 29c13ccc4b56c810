package load

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/infertop/infertop/probe"
)

// Sessions are multi-turn conversations: each closed-loop worker holds one
// session, sending its next turn when the last answer has come and Think
// has passed, the prompt growing by every turn (the last prompt, the
// answer's stand-in, a new user message of about the prompt knob's
// tokens); after Turns turns it starts a new session. The zero value is
// no sessions.
type Sessions struct {
	// Turns is the number of turns in a session (at least 1 when set).
	Turns int
	// Think is the wait between an answer and the next turn.
	Think time.Duration
	// MaxBytes caps a session's context in bytes (0: DefaultSessionBytes):
	// a session that would grow past it, or past MaxPromptTokens or the
	// model's context (Config.MaxContext) less the answer, starts again.
	MaxBytes int
}

// DefaultSessionBytes is the cap on a session's context when none is
// given: 32768 one-token words of about six bytes.
const DefaultSessionBytes = 6 * MaxPromptTokens

// MaxTurns bounds Sessions.Turns: the per-turn table has a row each.
const MaxTurns = 100

// set reports whether sessions are asked for.
func (s Sessions) set() bool { return s.Turns > 0 }

func (s Sessions) check() error {
	switch {
	case s.Turns < 0 || s.Turns > MaxTurns:
		return fmt.Errorf("%d turns is not within 1..%d", s.Turns, MaxTurns)
	case s.Think < 0:
		return fmt.Errorf("the think time %v is negative", s.Think)
	case s.MaxBytes < 0:
		return fmt.Errorf("the context cap %d bytes is negative", s.MaxBytes)
	}
	return nil
}

// prepareSessions checks a configuration's sessions: the closed loop,
// synthesised prompts.
func (c *Config) prepareSessions() error {
	s := c.Sessions
	if !s.set() && s == (Sessions{}) {
		return nil
	}
	if err := s.check(); err != nil {
		return &SettingError{SettingSessions, err}
	}
	switch {
	case !s.set():
		return &SettingError{SettingSessions, errors.New("a think time or a context cap needs a number of turns")}
	case c.Trace != nil || c.Dataset != nil:
		return &SettingError{SettingSessions, errors.New("sessions synthesise their turns: they do not go with a trace or a dataset")}
	case c.Knobs.Mode == OpenLoop:
		return &SettingError{SettingSessions, errors.New("sessions are the closed loop's (one a worker): they do not go with a rate")}
	}
	return nil
}

// TurnFigures are one turn's figures over the sessions since the start
// or the last reset: turn 1 against turn 5 is what a prefix cache
// changes.
type TurnFigures struct {
	// Turn is the turn's number, from 1.
	Turn int
	// Completed and Failed count its requests.
	Completed, Failed int64
	// PromptTokens is the mean prompt length of its completed requests.
	PromptTokens float64
	// TTFT and E2E are its requests' (service times: the closed loop's).
	TTFT, E2E Dist
}

// SessionFigures are the sessions' figures: the per-turn table and the
// time of whole sessions (first turn's start to last answer, think times
// included). The zero value is no sessions.
type SessionFigures struct {
	On           bool
	Turns        []TurnFigures
	Completed    int64 // sessions that ran every turn
	SessionTime  Dist
	Think        time.Duration
	TurnsPerSess int
}

// sessionStats are the sessions' histograms, kept by the workers under
// mu (one lock a request, off the per-message path).
type sessionStats struct {
	cfg  Sessions
	seed uint64
	seq  atomic.Uint64 // numbers sessions

	mu       sync.Mutex
	gen      int64
	turns    []turnHist
	sessions turnHist
}

type turnHist struct {
	ttft, e2e       *hdr.Histogram
	ttftM, e2eM     moments
	ok, failed      int64
	promptTokensSum float64
}

func newSessionStats(c *Config) *sessionStats {
	if !c.Sessions.set() {
		return nil
	}
	s := &sessionStats{cfg: c.Sessions, seed: c.Seed}
	s.clear()
	return s
}

func (s *sessionStats) clear() {
	s.turns = make([]turnHist, s.cfg.Turns)
	for i := range s.turns {
		s.turns[i] = turnHist{ttft: newHist(), e2e: newHist()}
	}
	s.sessions = turnHist{e2e: newHist()}
}

// resetTo forgets the figures once the engine's reset generation moved
// on (behind mu).
func (s *sessionStats) resetTo(gen int64) {
	if gen != s.gen {
		s.gen = gen
		s.clear()
	}
}

func record(h *hdr.Histogram, m *moments, d time.Duration) {
	v, _ := us(d)
	h.RecordValue(v) //nolint:errcheck // us clamps to the range
	m.add(v)
}

// turnDone records one turn's result.
func (s *sessionStats) turnDone(gen int64, turn int, res *probe.Result, prompt int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resetTo(gen)
	t := &s.turns[turn-1]
	if !res.OK() {
		t.failed++
		return
	}
	t.ok++
	t.promptTokensSum += float64(prompt)
	if res.HasTTFT {
		record(t.ttft, &t.ttftM, res.TTFT)
	}
	record(t.e2e, &t.e2eM, res.E2E)
}

// sessionDone records a whole session's time.
func (s *sessionStats) sessionDone(gen int64, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resetTo(gen)
	s.sessions.ok++
	record(s.sessions.e2e, &s.sessions.e2eM, d)
}

// figures are the sessions' figures now.
func (s *sessionStats) figures(gen int64) SessionFigures {
	if s == nil {
		return SessionFigures{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resetTo(gen)
	f := SessionFigures{On: true, Completed: s.sessions.ok, SessionTime: summarise(s.sessions.e2e, s.sessions.e2eM),
		Think: s.cfg.Think, TurnsPerSess: s.cfg.Turns}
	for i, t := range s.turns {
		tf := TurnFigures{Turn: i + 1, Completed: t.ok, Failed: t.failed, TTFT: summarise(t.ttft, t.ttftM), E2E: summarise(t.e2e, t.e2eM)}
		if t.ok > 0 {
			tf.PromptTokens = t.promptTokensSum / float64(t.ok)
		}
		f.Turns = append(f.Turns, tf)
	}
	return f
}

// conversation is one worker's session: its context so far and the turn
// it is at. Only its worker touches it.
type conversation struct {
	e       *Engine
	s       *sessionStats
	id      uint64
	turn    int // the turn to send next, 1..Turns; 0: a new session
	history string
	prompt  string // the turn in flight's prompt
	began   time.Time
	entry   TraceEntry
}

// conversationFor is worker's session, nil without sessions.
func (e *Engine) conversationFor() *conversation {
	if e.sessions == nil {
		return nil
	}
	return &conversation{e: e, s: e.sessions}
}

// next is the turn to send under the knobs k (nil without sessions): the
// context so far and a new user message of about k.PromptTokens tokens.
func (c *conversation) next(k Knobs) *TraceEntry {
	if c == nil {
		return nil
	}
	if c.turn == 0 {
		c.id, c.turn, c.history, c.began = c.s.seq.Add(1), 1, "", time.Now()
	}
	user := c.e.prompts.next(k.PromptTokens, c.turn == 1) // the shared prefix (a system prompt) opens the session only
	c.prompt = user
	if c.history != "" {
		c.prompt = c.history + " " + user
	}
	c.entry = TraceEntry{Prompt: c.prompt, Input: len(strings.Fields(c.prompt)), turn: c}
	return &c.entry
}

// done takes the answer to the turn in flight: the context grows by the
// prompt and a stand-in for the answer of as many tokens (the same text
// for the same session and turn), or the session ends early (a failed
// turn, a context past its cap).
func (c *conversation) done(res *probe.Result, prompt int) {
	gen := c.e.curGen.Load()
	if res.InputTokens > 0 && !res.InputEstimated { // the server's count, the chat template in it
		prompt = res.InputTokens
	}
	c.s.turnDone(gen, c.turn, res, prompt)
	if !res.OK() {
		c.turn = 0
		return
	}
	if c.turn == c.s.cfg.Turns {
		c.s.sessionDone(gen, time.Since(c.began))
		c.turn = 0
		return
	}
	var b strings.Builder
	b.Grow(len(c.prompt) + 8*res.OutputTokens)
	b.WriteString(c.prompt)
	b.WriteByte(' ')
	blockText(&b, c.s.seed^0x5e55, int64(c.id)<<8|int64(c.turn), max(res.OutputTokens, 1))
	c.history = b.String()
	c.turn++
	mostBytes := c.s.cfg.MaxBytes
	if mostBytes == 0 {
		mostBytes = DefaultSessionBytes
	}
	k := c.e.Knobs()
	most := MaxPromptTokens
	if limit := c.e.promptLimit(k.OutputTokens); limit > 0 { // the server's context, less the answer
		most = min(most, limit)
	}
	// A word is a token or more: the next turn's words past the limit are
	// tokens past it for sure.
	if len(c.history) > mostBytes || len(strings.Fields(c.history))+k.PromptTokens > most {
		c.turn = 0 // the context would pass its cap: a new session
	}
}

// think waits the think time before a session's next turn (none before a
// new session's first), or less when the knobs change or the run ends.
func (c *conversation) think(ctx context.Context, changed <-chan struct{}) {
	if c == nil || c.turn <= 1 || c.s.cfg.Think <= 0 {
		return
	}
	t := time.NewTimer(c.s.cfg.Think)
	defer t.Stop()
	select {
	case <-t.C:
	case <-changed:
	case <-ctx.Done():
	}
}
