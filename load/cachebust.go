package load

import (
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/infertop/infertop/probe"
)

// cacheBust opens every prompt with a marker of its own
// (Config.CacheBust), so that no two requests share a prefix block and a
// server's prefix cache holds nothing of one for another: the cold
// figures of a server whose cache cannot be emptied (no reset endpoint),
// or of a dataset or a trace whose prompts repeat. A session's marker
// opens its first message, which every later turn carries: its turns
// still share their own context, as a conversation's do.
//
// The markers are drawn from the seed and a key drawn afresh for each
// run, so that a run repeated with the same --seed (whose prompts are
// the same text) does not find the last run's prompts cached either.
type cacheBust struct{ key uint64 }

// newCacheBust is the markers of a run (nil: not asked for).
func newCacheBust(on bool, seed uint64) *cacheBust {
	if !on {
		return nil
	}
	return &cacheBust{key: splitmix(&seed) ^ rand.Uint64()}
}

// sessionMarkers is where a session's markers are numbered from: apart
// from the requests', whose numbers never reach it.
const sessionMarkers = 1 << 63

// marker is the marker of item n (a request's number, or a session's
// from sessionMarkers): a word of up to 13 letters and digits, distinct
// for every n of a run (n times splitmix's odd step is a bijection, and
// so is its finaliser).
func (b *cacheBust) marker(n uint64) string {
	x := b.key + n*0x9e3779b97f4a7c15
	return strconv.FormatUint(splitmix(&x), 36)
}

// mark puts request n's marker at the very start of req's text: its
// first message's (the chat APIs send them; the others join them into
// one prompt), else its prompt's. The messages are copied: a dataset's
// are shared by every request that takes them.
func (b *cacheBust) mark(req probe.Request, n uint64) probe.Request {
	m := b.marker(n) + " "
	if len(req.Messages) > 0 {
		req.Messages = slices.Clone(req.Messages)
		req.Messages[0].Content = m + req.Messages[0].Content
		return req
	}
	req.Prompt = m + req.Prompt
	return req
}
