package sim

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// text is n one-token words (of at most 5 characters) from a seed of
// its own, under 600.
func text(seed uint64, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = strconv.FormatUint(seed*100000+uint64(i), 36)
	}
	return strings.Join(ws, " ")
}

func TestPrefixCacheMatch(t *testing.T) {
	c := newPrefixCache(64, 16)
	shared := text(1, 64)
	a := shared + " " + text(2, 40)
	if got := c.match(a, CountTokens(a)); got != 0 {
		t.Fatalf("a cold cache hit %d tokens", got)
	}
	b := shared + " " + text(3, 40)
	if got := c.match(b, CountTokens(b)); got != 64 {
		t.Errorf("a shared prefix of 64 tokens: %d cached, want 64 (whole blocks only)", got)
	}
	if got := c.match(a, CountTokens(a)); got != 96 { // its own 6 whole blocks of 104 tokens
		t.Errorf("the same prompt again: %d cached, want 96", got)
	}
	// Chained: the same block after a different start is not a hit.
	d := text(4, 16) + " " + shared
	if got := c.match(d, CountTokens(d)); got != 0 {
		t.Errorf("a shared block after another first block: %d cached, want 0", got)
	}
	if q, h := c.queries.Load(), c.hits.Load(); q != int64(3*104+80) || h != 160 {
		t.Errorf("queries %d hits %d, want %d and 160", q, h, 3*104+80)
	}
}

func TestPrefixCacheEvicts(t *testing.T) {
	c := newPrefixCache(4, 16) // 64 tokens
	first := text(1, 64)
	c.match(first, 64)
	for i := range 3 {
		other := text(uint64(10+i), 64)
		c.match(other, 64)
	}
	if got := c.match(first, 64); got != 0 {
		t.Errorf("after the cache turned over: %d cached, want 0", got)
	}
	if c.lru.Len() != 4 || len(c.at) != 4 {
		t.Errorf("the LRU holds %d (map %d), want its size 4", c.lru.Len(), len(c.at))
	}
	if newPrefixCache(0, 16) != nil || newPrefixCache(0, 16).match("a b", 2) != 0 {
		t.Error("a cache of size 0 is no cache")
	}
}

// The cache works end to end: a second request sharing a long prefix
// skips that prefill (a lower server-side TTFT), its record says so, and
// /metrics counts vLLM's queries and hits.
func TestPrefixCacheServer(t *testing.T) {
	p := testParams()
	p.PrefillRate = 4000 // 1024 tokens: 256 ms of prefill
	s, url := startSim(t, p)
	shared := text(7, 1024)
	body := func(tail uint64) string {
		return fmt.Sprintf(`{"model":"sim-llama-8b","prompt":%q,"max_tokens":2}`, shared+" "+text(tail, 8))
	}
	for _, tail := range []uint64{100, 200} {
		if resp, b := post(t, url+"/v1/completions", body(tail)); resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
	}
	recs := s.Records()
	if len(recs) != 2 || recs[0].CachedTokens != 0 || recs[1].CachedTokens != 1024 || recs[1].PromptTokens != 1032 {
		t.Fatalf("records: %+v", recs)
	}
	if cold, warm := recs[0].TTFT(), recs[1].TTFT(); warm > cold/2 {
		t.Errorf("TTFT %v with the prefix cached, %v without: want far less", warm, cold)
	}
	r, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	resp := string(b)
	for _, want := range []string{`vllm:prefix_cache_queries_total{model_name="sim-llama-8b",source="sim"} 2064`, `vllm:prefix_cache_hits_total{model_name="sim-llama-8b",source="sim"} 1024`} {
		if !strings.Contains(resp, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// Off: no hits, however much is shared.
	p.PrefixCacheBlocks = 0
	s2, url2 := startSim(t, p)
	post(t, url2+"/v1/completions", body(1))
	post(t, url2+"/v1/completions", body(2))
	if r := s2.Records(); r[1].CachedTokens != 0 {
		t.Errorf("with the cache off, %d tokens cached", r[1].CachedTokens)
	}
}

func BenchmarkPrefixCacheMatch(b *testing.B) {
	c := newPrefixCache(1<<14, 16)
	prompt := text(1, 2048)
	b.ReportAllocs()
	for b.Loop() {
		c.match(prompt, 2048)
	}
}
