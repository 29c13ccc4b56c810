package probe

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/infertop/infertop/sim"
)

// TestResetPrefixCache: the sim's /reset_prefix_cache empties it; a
// server with neither endpoint is ErrNoCacheReset; SGLang's /flush_cache
// is found after vLLM's is not, and asked alone from then on; its
// refusal (requests in flight) is an error in its words.
func TestResetPrefixCache(t *testing.T) {
	p, _ := sim.Preset("fast")
	p.PrefixCacheBlocks = 64
	_, c := simClient(t, p, Config{})
	if err := c.ResetPrefixCache(context.Background()); err != nil {
		t.Fatalf("sim: %v", err)
	}
	p.PrefixCacheBlocks = 0 // no cache, nothing to reset: no endpoint
	_, c0 := simClient(t, p, Config{})
	if err := c0.ResetPrefixCache(context.Background()); !errors.Is(err, ErrNoCacheReset) {
		t.Fatalf("sim without a cache: %v", err)
	}

	var vllm, flushes atomic.Int64
	busy := atomic.Bool{}
	mux := http.NewServeMux()
	mux.HandleFunc("/reset_prefix_cache", func(w http.ResponseWriter, _ *http.Request) { vllm.Add(1); w.WriteHeader(http.StatusNotFound) })
	mux.HandleFunc("POST /flush_cache", func(w http.ResponseWriter, _ *http.Request) {
		flushes.Add(1)
		if busy.Load() {
			http.Error(w, "Cache not flushed because there are pending requests.", http.StatusBadRequest)
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c2, _ := New(Config{URL: srv.URL + "/v1/chat/completions"})
	defer c2.Close()
	for range 2 {
		if err := c2.ResetPrefixCache(context.Background()); err != nil {
			t.Fatalf("/flush_cache: %v", err)
		}
	}
	if vllm.Load() != 1 || flushes.Load() != 2 {
		t.Fatalf("asked /reset_prefix_cache %d times, /flush_cache %d: want 1 and 2", vllm.Load(), flushes.Load())
	}
	busy.Store(true)
	err := c2.ResetPrefixCache(context.Background())
	if err == nil || errors.Is(err, ErrNoCacheReset) || !strings.Contains(err.Error(), "HTTP 400: Cache not flushed") {
		t.Fatalf("a refusal: %v", err)
	}

	none := httptest.NewServer(http.NotFoundHandler())
	defer none.Close()
	c3, _ := New(Config{URL: none.URL + "/v1/chat/completions"})
	defer c3.Close()
	if err := c3.ResetPrefixCache(context.Background()); !errors.Is(err, ErrNoCacheReset) {
		t.Fatalf("no endpoint: %v", err)
	}
}
