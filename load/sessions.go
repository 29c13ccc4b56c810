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
// has passed, the context growing by every turn: the user's messages and
// the server's real answers (their text as it was sent, kept per session
// off the per-message path, see probe.AnswerText). The chat APIs get the
// turns as messages (user, assistant, ...), the others one prompt of
// them joined. A user message is one of about the prompt knob's tokens,
// or, with a dataset (Config.Dataset, a ShareGPT file), the next human
// turn of the session's conversation, which then runs its turns up to
// Turns. After its last turn a worker starts a new session. The zero
// value is no sessions.
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
// synthesised prompts or a dataset's conversations.
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
	case c.Trace != nil:
		return &SettingError{SettingSessions, errors.New("sessions send conversations: they do not go with a trace")}
	case c.Dataset != nil && c.Dataset.Conversations() == 0:
		return &SettingError{SettingSessions, errors.New("sessions take a dataset's conversations, and this one has none: give a ShareGPT file (a JSONL dataset is single prompts)")}
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
	// CachedTokens of CachedOf prompt tokens were held by the server's
	// prefix cache, by its own count, over its completed requests whose
	// server said (--server-timings): a warm cache's hit rate rises with
	// the turn, as each turn's context is the last turn's and more.
	CachedTokens, CachedOf int64
}

// HitRate is the turn's prefix-cache hit rate, its cached prompt tokens
// over its prompt tokens; false where no server said.
func (t TurnFigures) HitRate() (float64, bool) {
	if t.CachedOf <= 0 {
		return 0, false
	}
	return float64(t.CachedTokens) / float64(t.CachedOf), true
}

// SessionFigures are the sessions' figures: the per-turn table and the
// time of whole sessions (first turn's start to last answer, think times
// included). The zero value is no sessions.
type SessionFigures struct {
	On        bool
	Turns     []TurnFigures
	Completed int64 // sessions that ran every turn
	// Capped counts the sessions started again before their last turn
	// because the context would pass its cap (Sessions.MaxBytes, the
	// model's context).
	Capped int64
	// Conversations is true when the sessions are a dataset's
	// conversations: each runs its own turns, up to TurnsPerSess.
	Conversations bool
	SessionTime   Dist
	Think         time.Duration
	TurnsPerSess  int
}

// sessionStats are the sessions' histograms, kept by the workers under
// mu (one lock a request, off the per-message path).
type sessionStats struct {
	cfg   Sessions
	convs bool          // the sessions are a dataset's conversations
	seq   atomic.Uint64 // numbers sessions

	mu       sync.Mutex
	gen      int64
	turns    []turnHist
	sessions turnHist
	capped   int64
}

type turnHist struct {
	ttft, e2e       *hdr.Histogram
	ttftM, e2eM     moments
	ok, failed      int64
	promptTokensSum float64
	// cached of cachedOf prompt tokens the server's prefix cache held.
	cached, cachedOf int64
}

func newSessionStats(c *Config) *sessionStats {
	if !c.Sessions.set() {
		return nil
	}
	s := &sessionStats{cfg: c.Sessions, convs: c.Dataset != nil}
	s.clear()
	return s
}

func (s *sessionStats) clear() {
	s.turns = make([]turnHist, s.cfg.Turns)
	for i := range s.turns {
		s.turns[i] = turnHist{ttft: newHist(), e2e: newHist()}
	}
	s.sessions = turnHist{e2e: newHist()}
	s.capped = 0
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
	if cached, of, ok := PromptCached(res); ok {
		t.cached += cached
		t.cachedOf += of
	}
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

// cut counts a session started again at the context's cap.
func (s *sessionStats) cut(gen int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resetTo(gen)
	s.capped++
}

// figures are the sessions' figures now.
func (s *sessionStats) figures(gen int64) SessionFigures {
	if s == nil {
		return SessionFigures{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resetTo(gen)
	f := SessionFigures{On: true, Completed: s.sessions.ok, Capped: s.capped, Conversations: s.convs, SessionTime: summarise(s.sessions.e2e, s.sessions.e2eM),
		Think: s.cfg.Think, TurnsPerSess: s.cfg.Turns}
	for i, t := range s.turns {
		tf := TurnFigures{Turn: i + 1, Completed: t.ok, Failed: t.failed, TTFT: summarise(t.ttft, t.ttftM), E2E: summarise(t.e2e, t.e2eM),
			CachedTokens: t.cached, CachedOf: t.cachedOf}
		if t.ok > 0 {
			tf.PromptTokens = t.promptTokensSum / float64(t.ok)
		}
		f.Turns = append(f.Turns, tf)
	}
	return f
}

// conversation is one worker's session: its context so far and the turn
// it is at. Only its worker touches it (and, while a turn is out, the
// request's goroutine its answer).
type conversation struct {
	e     *Engine
	s     *sessionStats
	id    uint64
	turn  int // the turn to send next, 1..turns; 0: a new session
	turns int // this session's turns: Sessions.Turns, or fewer from a dataset's conversation
	// msgs is the context: the user's turns and the answers, ending with
	// the turn in flight's message. Sent as messages by the chat APIs,
	// joined into one prompt by the others.
	msgs         []probe.Message
	bytes, words int      // msgs' contents, in bytes and in words
	tokens       int      // the server's count of the last prompt plus its answer (0: not known)
	user         []string // a dataset conversation's user turns; nil: synthesised
	// pending is the next turn's user message, made when the last answer
	// came (to know before the think time whether it passes the cap),
	// for a prompt knob of pendingFor tokens.
	pending    string
	pendingFor int
	answer     probe.AnswerText
	began      time.Time
	entry      TraceEntry
}

// conversationFor is worker's session, nil without sessions.
func (e *Engine) conversationFor() *conversation {
	if e.sessions == nil {
		return nil
	}
	return &conversation{e: e, s: e.sessions}
}

// maxBytes is the cap on a session's context in bytes.
func (c *conversation) maxBytes() int {
	if c.s.cfg.MaxBytes > 0 {
		return c.s.cfg.MaxBytes
	}
	return DefaultSessionBytes
}

// start begins a new session.
func (c *conversation) start() {
	c.id, c.turn, c.turns, c.began = c.s.seq.Add(1), 1, c.s.cfg.Turns, time.Now()
	c.msgs, c.bytes, c.words, c.tokens, c.user, c.pending = c.msgs[:0], 0, 0, 0, nil, ""
	if d := c.e.cfg.Dataset; d != nil {
		c.user = d.takeConversation()
		c.turns = min(c.turns, len(c.user))
	}
}

// next is the turn to send under the knobs k (nil without sessions): the
// context so far and a new user message, the dataset conversation's next
// or one of about k.PromptTokens tokens. A session whose context would
// pass its cap with it (bytes, MaxPromptTokens, the model's context less
// the answer) starts again: a new session's first turn is sent whatever
// its length, as a single prompt would be.
func (c *conversation) next(k Knobs) *TraceEntry {
	if c == nil {
		return nil
	}
	if c.turn == 0 {
		c.start()
	}
	text := c.userText(k)
	if c.turn > 1 && c.passesCap(k, text) {
		c.s.cut(c.e.curGen.Load())
		c.start()
		text = c.userText(k)
	}
	if c.turn == 1 && c.e.bust != nil { // once a session: its turns share their context still
		text = c.e.bust.marker(sessionMarkers+c.id) + " " + text
	}
	c.msgs = append(c.msgs, probe.Message{Role: "user", Content: text})
	c.grow(text)
	c.answer.Max = c.maxBytes()
	c.entry = TraceEntry{Input: c.words, turn: c}
	return &c.entry
}

// userText is the user's message of the turn to send: the one made when
// the last answer came, unless the prompt knob has moved since.
func (c *conversation) userText(k Knobs) string {
	if text := c.pending; text != "" {
		c.pending = ""
		if c.user != nil || c.pendingFor == k.PromptTokens {
			return text
		}
	}
	if c.user != nil {
		return c.user[c.turn-1]
	}
	// The shared prefix (a system prompt) opens the session only.
	return c.e.prompts.next(k.PromptTokens, c.turn == 1)
}

// grow counts text into the context's size.
func (c *conversation) grow(text string) {
	c.bytes += len(text) + 1 // and the separator the prompt joins it with
	c.words += len(strings.Fields(text))
}

// passesCap reports whether the context with text added would pass a cap.
// A word is a token or more, and the server's count (its chat template
// in it) is the better where it gave one.
func (c *conversation) passesCap(k Knobs, text string) bool {
	most := MaxPromptTokens
	if limit := c.e.promptLimit(k.OutputTokens); limit > 0 { // the server's context, less the answer
		most = min(most, limit)
	}
	words := len(strings.Fields(text))
	return c.bytes+len(text) > c.maxBytes() || max(c.words, c.tokens)+words > most
}

// request is the turn's request: the context so far, and a buffer for the
// answer's text, which the next turn carries.
func (c *conversation) request() probe.Request {
	return probe.Request{Messages: c.msgs, Answer: &c.answer}
}

// done takes the answer to the turn in flight: the context grows by the
// answer's text as the server sent it, or the session ends (its last
// turn, a failed turn, an answer past the cap). It returns the whole
// session's time when the turn completed one.
func (c *conversation) done(res *probe.Result, prompt int) time.Duration {
	gen := c.e.curGen.Load()
	if res.InputTokens > 0 && !res.InputEstimated { // the server's count, the chat template in it
		prompt = res.InputTokens
	}
	c.s.turnDone(gen, c.turn, res, prompt)
	if !res.OK() {
		c.turn = 0
		return 0
	}
	if c.turn == c.turns {
		d := time.Since(c.began)
		c.s.sessionDone(gen, d)
		c.turn = 0
		return d
	}
	if text := c.answer.String(); text != "" { // an answer of no text (reasoning only) adds no turn
		c.msgs = append(c.msgs, probe.Message{Role: "assistant", Content: text})
		c.grow(text)
	}
	c.tokens = 0
	if res.InputTokens > 0 && !res.InputEstimated && !res.OutputEstimated {
		c.tokens = res.InputTokens + res.AnswerTokens() // the reasoning is not in the context
	}
	c.turn++
	// The next turn's message now: a session it would take past the cap
	// ends here, and the next starts without a think time.
	k := c.e.Knobs()
	c.pending, c.pendingFor = c.userText(k), k.PromptTokens
	if c.answer.Truncated() || c.bytes > c.maxBytes() || c.passesCap(k, c.pending) {
		c.s.cut(gen)
		c.turn = 0 // the context passed its cap: a new session
	}
	return 0
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
