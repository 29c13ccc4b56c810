package telemetry

import dto "github.com/prometheus/client_model/go"

// The prefix cache's metrics: vLLM's counters (V1, in tokens), its older
// gauge (V0), SGLang's gauge. A counter pair gives the hit rate over a
// window; a gauge is the server's own figure, however it averages.
const (
	vllmPrefixQueries = "vllm:prefix_cache_queries_total"
	vllmPrefixHits    = "vllm:prefix_cache_hits_total"
	vllmPrefixRate    = "vllm:gpu_prefix_cache_hit_rate"
	sglangPrefixRate  = "sglang:cache_hit_rate"
)

// prefixFamilies are the families readPrefix reads, for ParseServer's
// filter of the page.
func prefixFamilies() []string {
	return []string{vllmPrefixQueries, vllmPrefixHits, vllmPrefixRate, sglangPrefixRate}
}

// prefixCache is a reading of the server's prefix cache: counters of
// tokens looked up and found (Counted), or a hit rate it computed itself,
// 0..1 (Gauged).
type prefixCache struct {
	Queries, Hits, Rate float64
	Counted, Gauged     bool
}

// readPrefix reads the prefix cache's metrics of an engine of kind.
func readPrefix(fams map[string]*dto.MetricFamily, kind string) prefixCache {
	var p prefixCache
	switch kind {
	case "vllm":
		q, okQ := sum(fams, vllmPrefixQueries)
		h, okH := sum(fams, vllmPrefixHits)
		if okQ && okH {
			p.Queries, p.Hits, p.Counted = q, h, true
		} else if r, ok := sum(fams, vllmPrefixRate); ok {
			p.Rate, p.Gauged = r, true
		}
	case "sglang":
		if r, ok := sum(fams, sglangPrefixRate); ok {
			p.Rate, p.Gauged = r, true
		}
	}
	return p
}

// prefixHitRate is the prefix cache's hit rate between two readings
// (tokens found over tokens looked up in between), or the server's own
// gauge; ok is false when neither says (no lookups in between).
func prefixHitRate(first, last prefixCache) (rate float64, ok bool) {
	switch {
	case last.Counted && first.Counted:
		if dq := last.Queries - first.Queries; dq > 0 {
			return min(max((last.Hits-first.Hits)/dq, 0), 1), true
		}
	case last.Gauged:
		return min(max(last.Rate, 0), 1), true
	}
	return 0, false
}
