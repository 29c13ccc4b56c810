package sim

import (
	"container/list"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// DefaultBlockTokens is the prefix cache's block length when
// Params.BlockTokens is 0: vLLM's default block size.
const DefaultBlockTokens = 16

// prefixCache is the sim's automatic prefix cache, as vLLM's: a prompt's
// tokens in blocks of a fixed length, each block known by a hash chained
// from the blocks before it (so a hit on a block is a hit on the whole
// prefix up to it), the blocks kept in an LRU of a fixed number. A prompt
// whose first blocks are cached skips their prefill. Blocks are entered
// when a request is submitted, so what hits depends only on the order of
// arrivals. Safe for concurrent use.
type prefixCache struct {
	block, size int

	mu  sync.Mutex
	lru *list.List // of uint64 hashes, the most recent at the front
	at  map[uint64]*list.Element

	// vLLM's counters: prompt tokens looked up, and those found; and the
	// times the cache was emptied (reset).
	queries, hits, resets atomic.Int64
}

// reset empties the cache, as vLLM's /reset_prefix_cache does: every
// prompt after it misses until its blocks are entered again.
func (c *prefixCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Init()
	clear(c.at)
	c.resets.Add(1)
}

// newPrefixCache is a cache of size blocks of block tokens (block 0:
// DefaultBlockTokens); nil when size is 0: no cache.
func newPrefixCache(size, block int) *prefixCache {
	if size <= 0 {
		return nil
	}
	if block <= 0 {
		block = DefaultBlockTokens
	}
	return &prefixCache{block: block, size: size, lru: list.New(), at: make(map[uint64]*list.Element, min(size, 1<<16))}
}

// match returns how many of text's leading tokens (of tokens, its count by
// CountTokens) are cached, then caches its every whole block. Tokens are
// CountTokens' (a word, and one more every 6 characters of a long word):
// a word is hashed whole into the block its first token falls in.
func (c *prefixCache) match(text string, tokens int) int {
	if c == nil {
		return 0
	}
	c.queries.Add(int64(tokens))
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	inBlock, cached := 0, 0
	matching := true
	c.mu.Lock()
	defer c.mu.Unlock()
	end := func() { // a whole block: look it up, then keep it
		if e, ok := c.at[h]; ok {
			c.lru.MoveToFront(e)
			if matching {
				cached += inBlock
			}
		} else {
			matching = false
			c.at[h] = c.lru.PushFront(h)
			if c.lru.Len() > c.size {
				old := c.lru.Back()
				delete(c.at, old.Value.(uint64))
				c.lru.Remove(old)
			}
		}
		// The next block's hash starts from this one's: chained.
		h = (h ^ 0xff) * prime
		inBlock = 0
	}
	wordLen := 0
	for i := 0; i <= len(text); i++ {
		if i == len(text) || text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r' {
			if wordLen > 0 {
				inBlock += 1 + (wordLen-1)/6
				h = (h ^ ' ') * prime
				wordLen = 0
				if inBlock >= c.block {
					end()
				}
			}
			continue
		}
		h = (h ^ uint64(text[i])) * prime
		wordLen++
	}
	c.hits.Add(int64(cached))
	return cached
}

// cacheText is the text of a request's prompt the prefix cache hashes:
// the chat messages' contents one after another, the completion's prompt,
// the plain API's input; "" for the other APIs (their prompts go
// uncached). Read again from the body, and only with a cache.
func cacheText(kind apiKind, req *genRequest) string {
	switch kind {
	case kindChat:
		var b strings.Builder
		for _, raw := range req.Messages {
			var m struct {
				Content json.RawMessage `json:"content"`
			}
			if json.Unmarshal(raw, &m) != nil {
				return ""
			}
			text, err := contentText(m.Content)
			if err != nil {
				return ""
			}
			b.WriteString(text)
			b.WriteByte(' ')
		}
		return b.String()
	case kindCompletions:
		text, _ := contentText(req.Prompt)
		return text
	case kindInfer:
		text, _ := contentText(req.Input)
		return text
	}
	return ""
}

// handleResetPrefixCache serves POST /reset_prefix_cache as vLLM does:
// every pod's prefix cache emptied, answered 200 with no body. A sim with
// no prefix cache has no such endpoint (404), as a server without one.
func (s *Server) handleResetPrefixCache(w http.ResponseWriter, r *http.Request) {
	if s.sched.prefix == nil {
		http.NotFound(w, r)
		return
	}
	for _, sc := range s.pods() {
		sc.prefix.reset()
	}
	w.WriteHeader(http.StatusOK)
}
