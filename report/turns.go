package report

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/infertop/infertop/load"
)

// writeTurns is the sessions' table: each turn's TTFT and E2E over every
// session (turn 1 against turn 5 is what a prefix cache changes), then
// the time of whole sessions. Turns are not phases: a phase is a knob
// setting, a turn a place in a conversation.
func writeTurns(b *strings.Builder, f load.SessionFigures) {
	if !f.On {
		return
	}
	fmt.Fprintf(b, "\nSessions of %s%d turns (think %s) · %d sessions done", upTo(f.Conversations), f.TurnsPerSess, f.Think, f.Completed)
	if f.Capped > 0 {
		fmt.Fprintf(b, " · %d started again at the context's cap", f.Capped)
	}
	if d := f.SessionTime; d.Count > 0 {
		fmt.Fprintf(b, " · session time p50 %s, p99 %s", fms(d.P50), fms(d.P99))
	}
	b.WriteString("\n")
	cache := turnsCached(f.Turns)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  turn\tdone\tfailed\tprompt tok\t")
	if cache {
		fmt.Fprintf(tw, "cache hit\t")
	}
	fmt.Fprintf(tw, "TTFT p50\tTTFT p99\tTTFT mean\tE2E p50\tE2E p99\t\n")
	for _, t := range f.Turns {
		fmt.Fprintf(tw, "  %d\t%d\t%d\t%.0f\t", t.Turn, t.Completed, t.Failed, t.PromptTokens)
		if cache {
			fmt.Fprintf(tw, "%s\t", HitRateText(t))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", fms(t.TTFT.P50), fms(t.TTFT.P99), fms(t.TTFT.Mean), fms(t.E2E.P50), fms(t.E2E.P99))
	}
	tw.Flush()
	if cache {
		b.WriteString("  cache hit: the prompt tokens the server's prefix cache held, by its own count\n")
	}
}

// turnsCached reports whether any turn's server said what its prefix
// cache held: the tables show the hit rate's column only then.
func turnsCached(ts []load.TurnFigures) bool {
	for _, t := range ts {
		if t.CachedOf > 0 {
			return true
		}
	}
	return false
}

// HitRateText is a turn's prefix-cache hit rate as the tables show it
// ("46.7 %"), "–" where its server did not say.
func HitRateText(t load.TurnFigures) string {
	r, ok := t.HitRate()
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.1f %%", 100*r)
}

// upTo is what a sessions heading says of a dataset's conversations:
// each runs its own turns, up to the turns configured.
func upTo(conversations bool) string {
	if conversations {
		return "up to "
	}
	return ""
}

// SessionsJSON is a result's infertop.sessions: the per-turn table of a
// sessions run (--sessions) and the time of whole sessions.
type SessionsJSON struct {
	TurnsPerSession int        `json:"turns_per_session"`
	ThinkS          float64    `json:"think_s"`
	Completed       int64      `json:"sessions_completed"`
	Capped          int64      `json:"sessions_capped"`
	Conversations   bool       `json:"conversations"`
	SessionTime     DistJSON   `json:"session_time"`
	Turns           []TurnJSON `json:"turns"`
}

// TurnJSON is one turn's row: its requests over every session.
type TurnJSON struct {
	Turn         int      `json:"turn"`
	Completed    int64    `json:"completed"`
	Failed       int64    `json:"failed"`
	PromptTokens float64  `json:"mean_prompt_tokens"`
	TTFT         DistJSON `json:"ttft"`
	E2E          DistJSON `json:"e2el"`
	// CachedPromptTokens of PromptTokensCacheKnown were held by the
	// server's prefix cache (its completed requests whose server said,
	// as a phase's); PrefixCacheHitRate is their ratio, absent where no
	// server said.
	CachedPromptTokens     int64    `json:"cached_prompt_tokens,omitempty"`
	PromptTokensCacheKnown int64    `json:"prompt_tokens_cache_known,omitempty"`
	PrefixCacheHitRate     *float64 `json:"prefix_cache_hit_rate,omitempty"`
}

func sessionsJSON(f load.SessionFigures) *SessionsJSON {
	if !f.On {
		return nil
	}
	s := &SessionsJSON{TurnsPerSession: f.TurnsPerSess, ThinkS: f.Think.Seconds(), Completed: f.Completed, Capped: f.Capped, Conversations: f.Conversations, SessionTime: dist(f.SessionTime), Turns: []TurnJSON{}}
	for _, t := range f.Turns {
		tj := TurnJSON{Turn: t.Turn, Completed: t.Completed, Failed: t.Failed, PromptTokens: t.PromptTokens, TTFT: dist(t.TTFT), E2E: dist(t.E2E),
			CachedPromptTokens: t.CachedTokens, PromptTokensCacheKnown: t.CachedOf}
		if r, ok := t.HitRate(); ok {
			tj.PrefixCacheHitRate = &r
		}
		s.Turns = append(s.Turns, tj)
	}
	return s
}

// TraceJSON is a result's infertop.trace: what a replay (--trace) sent
// and how far behind it fell.
type TraceJSON struct {
	Name       string  `json:"name"`
	Format     string  `json:"format"`
	Speed      float64 `json:"speed"`
	Arrivals   int     `json:"arrivals"`
	Entries    int     `json:"entries"`
	Passes     int     `json:"passes"`
	SpanS      float64 `json:"span_s"`
	MaxBehindS float64 `json:"max_behind_s"`
	FellBehind bool    `json:"fell_behind"`
	Skipped    int     `json:"skipped_failed_rows"`
	Filtered   int     `json:"filtered_rows"`
}

func traceJSON(t load.TraceStatus) *TraceJSON {
	if !t.On {
		return nil
	}
	return &TraceJSON{Name: t.Name, Format: t.Format, Speed: t.Speed, Arrivals: t.Pass*t.Total + t.Sent, Entries: t.Total, Passes: t.Pass,
		SpanS: t.Span.Seconds(), MaxBehindS: t.MaxBehind.Seconds(), FellBehind: t.MaxBehind > load.BehindNotice, Skipped: t.Skipped, Filtered: t.Filtered}
}
