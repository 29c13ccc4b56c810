package agent

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/report"
)

// Seconds is an agent's GET /seconds?since=N: its load's seconds sealed
// after second N (none given: every one it keeps), each with its
// counters and its latency histograms, which a follower adds up bucket
// for bucket with the other agents' into the live window's exact figures.
type Seconds struct {
	// Encoding is report.HistogramEncoding: the histograms' form.
	Encoding string `json:"encoding"`
	// Started is the instant the load's second 0 began, on the agent's
	// clock; a second Sec spans Started+Sec s to Started+Sec+1 s.
	Started time.Time `json:"started"`
	// From is the first second of the figures: the last reset's (0:
	// none); Current the second the load is in, not yet sealed.
	From    int64 `json:"from"`
	Current int64 `json:"current"`
	// Seconds are oldest first; Skipped counts the oldest ones after
	// since left out to keep the answer within its bound (the newest
	// are what a window needs).
	Seconds []Second `json:"seconds"`
	Skipped int      `json:"skipped,omitempty"`
}

// Second is one sealed second (load.SealedSecond).
type Second struct {
	Sec           int64            `json:"sec"`
	Completed     int64            `json:"completed"`
	Failed        int64            `json:"failed"`
	Good          int64            `json:"good"`
	FailedByClass map[string]int64 `json:"failed_by_class,omitempty"`
	OutputTokens  int64            `json:"output_tokens"`
	InputTokens   int64            `json:"input_tokens"`
	InFlight      int              `json:"in_flight"`
	// Hist are the second's histograms by metric key (ttft, e2el, ...;
	// report.MetricKey), in Encoding; a metric with no value has none.
	Hist map[string]string `json:"hist,omitempty"`
}

// MaxSecondsBytes bounds a /seconds answer, as a follower reads it; an
// agent keeps its answers within half of it (secondsBudget), leaving out
// the oldest seconds where the ring's would be more.
const MaxSecondsBytes = 8 << 20

// secondsBudget is what an agent's /seconds answer may hold of its
// seconds' histograms and counters, as secondSize counts them.
const secondsBudget = MaxSecondsBytes / 2

// secondSize is a second's size in the JSON, within a few bytes: its
// histograms (base64: written as they are) and its keys and counters.
func secondSize(s *Second) int {
	n := 512 // the keys and counters, the classes' names
	for k, v := range s.Hist {
		n += len(k) + len(v) + 6
	}
	return n
}

// secondsLoad is a load that hands out its sealed seconds (a runner).
type secondsLoad interface {
	Seconds(ctx context.Context, since int64) (load.Sealed, error)
}

// errNoSeconds is a load that keeps no seconds, or none started yet.
var errNoSeconds = errors.New("the load has not started")

// Seconds is the load's seconds sealed after since (Handler's GET
// /seconds); the histograms are encoded here, on the handler's goroutine,
// not on the engine's loop.
func (b *Board) Seconds(ctx context.Context, since int64) (*Seconds, error) {
	return b.secondsOf(ctx, since, 0)
}

// secondsOf is Seconds of load i (1: a comparison's canary).
func (b *Board) secondsOf(ctx context.Context, since int64, i int) (*Seconds, error) {
	b.mu.Lock()
	l := b.loads[i]
	b.mu.Unlock()
	sl, ok := l.(secondsLoad)
	if !ok {
		return nil, errNoSeconds
	}
	sealed, err := sl.Seconds(ctx, since)
	if err != nil {
		return nil, err
	}
	return secondsOf(sealed, secondsBudget), nil
}

// secondsOf is sealed on the wire, its newest seconds within budget bytes
// (secondSize), the oldest left out past it (Skipped).
func secondsOf(sealed load.Sealed, budget int) *Seconds {
	out := &Seconds{Encoding: report.HistogramEncoding, Started: sealed.Start, From: sealed.From, Current: sealed.Current,
		Seconds: make([]Second, 0, len(sealed.Seconds))}
	size := 0
	for i := len(sealed.Seconds) - 1; i >= 0; i-- { // the newest first, while they fit
		s := &sealed.Seconds[i]
		j := Second{Sec: s.Sec, Completed: s.Completed, Failed: s.Failed, Good: s.Good, OutputTokens: s.OutTokens, InputTokens: s.InTokens,
			InFlight: s.InFlight}
		for _, c := range probe.FailureClasses() {
			if n := s.ByClass[c]; n > 0 {
				if j.FailedByClass == nil {
					j.FailedByClass = map[string]int64{}
				}
				j.FailedByClass[c.String()] = n
			}
		}
		for m := range load.NumMetrics {
			if enc := s.Encoded(m); enc != nil {
				if j.Hist == nil {
					j.Hist = map[string]string{}
				}
				j.Hist[report.MetricKey(m)] = string(enc)
			}
		}
		if size += secondSize(&j); size > budget {
			out.Skipped = i + 1
			break
		}
		out.Seconds = append(out.Seconds, j)
	}
	slices.Reverse(out.Seconds)
	return out
}

// sinceParam is /seconds' since (absent: -1, every second kept).
func sinceParam(r *http.Request) (int64, error) {
	v := r.URL.Query().Get("since")
	if v == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < -1 {
		return 0, errors.New("since is a second of the run (-1 or more)")
	}
	return n, nil
}
