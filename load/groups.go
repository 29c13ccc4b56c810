package load

import "strings"

// MaxPrefixGroups bounds Config.PrefixGroups: each group's prefix is text
// kept for the run (up to MaxPromptTokens words).
const MaxPrefixGroups = 1024

// withGroups gives g n distinct prefixes (n past 1, and a prefix set):
// request k starts with prefix k mod n, so n system prompts are shared
// across the load, each by every n-th request. The texts are a trace
// block's (blockText), from the prefixes' seed and the group's number.
func (g *PromptGen) withGroups(n int) *PromptGen {
	if n <= 1 || g.pwords == 0 {
		return g
	}
	g.groups = make([]string, n)
	for i := range g.groups {
		var b strings.Builder
		b.Grow(g.pwords * 6)
		seed := g.seed
		if g.pseed != nil {
			seed = *g.pseed
		}
		blockText(&b, seed, -1-int64(i), g.pwords)
		g.groups[i] = b.String()
	}
	return g
}

// prefixOf is the prefix of the request numbered n.
func (g *PromptGen) prefixOf(n uint64) string {
	if len(g.groups) == 0 {
		return g.prefix
	}
	return g.groups[n%uint64(len(g.groups))]
}
