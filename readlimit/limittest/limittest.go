// Package limittest measures, in tests, what a bounded read promises:
// the heap's peak while a hostile input is read. The project's promise
// is that no hostile case costs more than 200 MB; each package's hostile
// tests hold their cases to it with HeapPeak.
package limittest

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// HeapPeak runs fn and returns how far the heap in use rose above its
// level before (after a collection) at its highest, sampled every
// millisecond, and how far above it stayed after fn and a collection.
func HeapPeak(fn func()) (peak, after uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var top atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > top.Load() {
				top.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return max(top.Load(), base) - base, max(ms.HeapInuse, base) - base
}
