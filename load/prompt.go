package load

import (
	"strconv"
	"strings"
	"sync/atomic"
)

// promptWords are short common English words: each is one token in the
// usual BPE tokenizers (with its leading space), so N words make about N
// tokens.
var promptWords = strings.Fields(`time year people way day man thing woman life child world school state family
student group country problem hand part place case week company system program question work government number
night point home water room mother area money story fact month lot right study book eye job word business issue
side kind head house service friend father power hour game line end member law car city name team minute idea
kid body back parent face others level office door health person art war history party result change morning
reason research girl guy moment air teacher force order`)

// PromptGen synthesises prompts of about N tokens. Every prompt starts with
// a request number and takes its words from a different place in a long
// pseudo-random text, so no two prompts share a prefix and a server's
// prefix cache cannot flatter the numbers.
type PromptGen struct {
	text   string
	starts []int // byte offset of each word in text
	seq    atomic.Uint64
	prefix string // shared by every prompt (prefix-cache experiments)
	pwords int
	groups []string // the prefixes of groups of prompts, when more than one (withGroups)
	seed   uint64
	pseed  *uint64 // the prefixes' seed (nil: seed's)
}

// textWords is the length of the base text; prompts longer than this wrap.
const textWords = MaxPromptTokens + 4096

// NewPromptGen builds the base text from seed; every prompt starts with the
// same prefixWords words when prefixWords > 0.
func NewPromptGen(seed uint64, prefixWords int) *PromptGen {
	var b strings.Builder
	g := &PromptGen{starts: make([]int, 0, textWords), seed: seed}
	x := seed*0x9e3779b97f4a7c15 + 1
	for range textWords {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		g.starts = append(g.starts, b.Len())
		b.WriteString(promptWords[x%uint64(len(promptWords))])
		b.WriteByte(' ')
	}
	g.text = b.String()
	if prefixWords > 0 {
		g.pwords = min(prefixWords, textWords-1)
		g.prefix = strings.TrimSuffix(g.text[:g.starts[g.pwords]], " ")
	}
	return g
}

// withPrefixSeed writes g's shared prefix (and its groups') from seed,
// not g's own (nil, or g's own: as it is): an agent's prompts are its
// own, its prefixes the whole load's.
func (g *PromptGen) withPrefixSeed(seed *uint64) *PromptGen {
	if seed == nil || *seed == g.seed || g.pwords == 0 {
		return g
	}
	g.prefix, g.pseed = NewPromptGen(*seed, g.pwords).prefix, seed
	return g
}

// words is how many words Next(n) writes: n, or the prefix and the
// request's marker when the prefix is longer.
func (g *PromptGen) words(n int) int {
	if g.pwords > 0 {
		return max(n, g.pwords+1)
	}
	return max(n, 1)
}

// Next returns a fresh prompt of about tokens tokens.
func (g *PromptGen) Next(tokens int) string { return g.next(tokens, true) }

// next is a fresh prompt of about tokens tokens, starting with the shared
// prefix when prefixed (a session's later turns have it in their context
// already).
func (g *PromptGen) next(tokens int, prefixed bool) string {
	n := g.seq.Add(1)
	tokens = max(tokens, 1)
	var b strings.Builder
	b.Grow(tokens*6 + len(g.prefix) + 16)
	rest := tokens - 1
	if g.pwords > 0 && prefixed { // a prefix longer than the prompt is honoured: the prompt grows to hold it
		b.WriteString(g.prefixOf(n))
		b.WriteByte(' ')
		rest = max(rest-g.pwords, 0)
	}
	b.WriteByte('r')
	b.WriteString(strconv.FormatUint(n, 36))
	off := int((n * 7919) % uint64(len(g.starts)))
	for rest > 0 {
		take := min(rest, len(g.starts)-off)
		end := len(g.text)
		if off+take < len(g.starts) {
			end = g.starts[off+take]
		}
		b.WriteByte(' ')
		b.WriteString(strings.TrimSuffix(g.text[g.starts[off]:end], " "))
		rest -= take
		off = 0
	}
	return b.String()
}
