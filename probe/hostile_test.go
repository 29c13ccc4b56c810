package probe

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Hostile endpoints: servers that send what no honest one would, each met
// at one boundary of the client. Every server listens on 127.0.0.1 only
// (httptest) and every stream stops when its client goes, or after
// hostileMax at the latest (past the clients' timeout, so that a slow
// client meets its cap, not the server's end).

const hostileMax = 90 * time.Second

// endlessServer answers 200 with ctype and then writes unit over and over,
// in batches, until the client hangs up or hostileMax passes.
func endlessServer(t *testing.T, ctype, head, unit string) *httptest.Server {
	t.Helper()
	batch := []byte(strings.Repeat(unit, max(1, (32<<10)/len(unit))))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, head)
		stop := time.Now().Add(hostileMax)
		for r.Context().Err() == nil && time.Now().Before(stop) {
			if _, err := w.Write(batch); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// heapWatch samples the heap while fn runs, and returns how far HeapAlloc
// rose above its level before (after a collection) at its peak, and after
// fn and a collection.
func heapWatch(fn func()) (peak, after uint64) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var top atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > top.Load() {
					top.Store(ms.HeapAlloc)
				}
			}
		}
	}()
	fn()
	close(done)
	wg.Wait()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	grew := func(v uint64) uint64 {
		if v < base {
			return 0
		}
		return v - base
	}
	return grew(top.Load()), grew(ms.HeapAlloc)
}

// hammerTwo sends n requests from each of two workers, every one of which
// must end within perRequest; it returns every result.
func hammerTwo(t *testing.T, c *Client, req Request, n int, perRequest time.Duration) []Result {
	t.Helper()
	var (
		mu  sync.Mutex
		all []Result
		wg  sync.WaitGroup
	)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				t0 := time.Now()
				res := c.Do(context.Background(), req)
				if took := time.Since(t0); took > perRequest {
					t.Errorf("a request took %v, want under %v (%v: %s)", took, perRequest, res.Class, res.Err)
				}
				mu.Lock()
				all = append(all, res)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return all
}

// TestHostileStreamsBounded: streams that never end, each in its own way,
// end as malformed at the cap that stops them, with the heap bounded
// throughout and given back after. Before the caps, endless data lines
// reached 1.9 GB and endless tiny events 1.6 GB in ten seconds.
func TestHostileStreamsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("seconds of hostile streams")
	}
	const chunk = `{"id":"x","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}`
	tests := []struct {
		name, ctype, head, unit string
		api                     Kind
		maxTokens               int
		want                    string // in Err
		// each is the requests each of the two workers sends: two (the
		// second on a pooled state the first gave back), one where one
		// stream alone takes seconds under -race (2 M lines to the cap).
		each int
	}{
		// One event made of endless data lines and no blank line: each
		// line is short, so only the event cap can stop it.
		{"endless data lines", "text/event-stream", "", "data: x\n", OpenAIChat, 256, "cap on one event's data", 1},
		// One line that never ends.
		{"endless line", "text/event-stream", "data: ", "xxxxxxxx", OpenAIChat, 256, "cap on one line", 2},
		// Endless well-formed content events and never [DONE]: each takes
		// a slot of the request's message times, so only the message cap stops it.
		{"endless tiny events", "text/event-stream", "", "data: " + chunk + "\n\n", OpenAIChat, 4096, "cap on one request's messages, 4×max_tokens 4096 + 64", 2},
		{"endless ndjson lines", "application/x-ndjson", "", `{"message":{"content":"x"},"done":false}` + "\n", Ollama, 4096, "cap on one request's messages", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := endlessServer(t, tt.ctype, tt.head, tt.unit)
			// Bounded, not fast: 16 MiB of tiny lines took 10.8 s under
			// -race on a busy machine, and more than 20 s at a load of 14.
			c, err := New(Config{URL: srv.URL + "/v1/chat/completions", Model: "m", API: tt.api, Timeout: 60 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var results []Result
			peak, after := heapWatch(func() {
				// A count, not a time: it was 2 s of requests, 2 to 62 of
				// them (2 where one stream alone took 4 s).
				results = hammerTwo(t, c, Request{Prompt: "x", MaxTokens: tt.maxTokens}, tt.each, 60*time.Second)
			})
			c.Close()
			for _, res := range results {
				if res.Class != Malformed || !strings.Contains(res.Err, tt.want) {
					t.Fatalf("class %v (%q), want malformed naming %q", res.Class, res.Err, tt.want)
				}
			}
			t.Logf("%d requests, heap peak +%d MiB, after +%d MiB: %s", len(results), peak>>20, after>>20, results[0].Err)
			// Two streams of at most MaxEventBytes (or MaxLineBytes) each,
			// their buffers grown by appends, with the collector's slack
			// on top; not gigabytes.
			if peak > 192<<20 {
				t.Errorf("heap peaked %d MiB above its start", peak>>20)
			}
			if after > 64<<20 {
				t.Errorf("heap %d MiB above its start once done: the pool kept what the streams grew", after>>20)
			}
		})
	}
}

// TestOutputCap: the bound grows with max_tokens, holds without one, and
// does not overflow.
func TestOutputCap(t *testing.T) {
	for _, tt := range []struct{ max, want int }{
		{0, 1 << 20}, {-1, 1 << 20}, {1, 68}, {16, 128}, {4096, 16448},
		{math.MaxInt, 4*((math.MaxInt-64)/4) + 64},
	} {
		if got := OutputCap(tt.max); got != tt.want {
			t.Errorf("OutputCap(%d) = %d, want %d", tt.max, got, tt.want)
		}
	}
	if s := capRule(0); s != "with no max_tokens" {
		t.Errorf("capRule(0) = %q", s)
	}
}

// TestStreamStateShrinks: a state that read a long message goes back to
// the pool without the buffers and the parser it grew.
func TestStreamStateShrinks(t *testing.T) {
	big := strings.Repeat("x", 512<<10)
	for _, fr := range []framing{frameSSE, frameNDJSON} {
		st := getStreamState(strings.NewReader("data: \"" + big + "\"\n\n"))
		var data []byte
		var err error
		if fr == frameSSE {
			var ev Event
			ev, err = st.sse.Next()
			data = ev.Data
		} else {
			data, err = st.nd.Next()
		}
		if err != nil {
			t.Fatal(err)
		}
		st.parser.json.ParseBytes(bytes.TrimPrefix(data, []byte("data: ")))
		st.shrink()
		if cap(st.sse.data) > keepBytes || cap(st.sse.long) > keepBytes || cap(st.nd.long) > keepBytes {
			t.Fatalf("kept %d, %d, %d bytes of buffers", cap(st.sse.data), cap(st.sse.long), cap(st.nd.long))
		}
		if !reflect.DeepEqual(st.parser, parser{}) {
			t.Fatal("kept the parser that read a 512 KiB message")
		}
		st.release()
	}
	// A short stream keeps its buffers: pooling is the point.
	st := getStreamState(strings.NewReader("data: {}\n\n"))
	st.sse.Next()
	st.sse.data = append(st.sse.data, make([]byte, 1024)...)
	st.shrink()
	if cap(st.sse.data) == 0 {
		t.Fatal("dropped a 1 KiB buffer")
	}
	st.release()
}
