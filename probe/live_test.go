package probe

import (
	"testing"
	"time"
)

// TestLiveConcurrent: one goroutine writes a Live message by message
// while another reads it as the engine's aggregator does; every entry the
// reader sees is the one written (the race detector holds the rest), also
// across the slice's growth, and a new request on the Live starts over.
func TestLiveConcurrent(t *testing.T) {
	origin := time.Now()
	l := &Live{Origin: origin}
	start := origin.Add(time.Second)
	const n = 20000
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Begin(start)
		for i := range n {
			m := Answer
			if i%3 == 0 {
				m = Timed
			}
			l.Add(start, time.Duration(i)*time.Microsecond, m)
		}
	}()
	read := 0
	for read < n {
		for m := l.Len(); read < m; read++ {
			at, m := l.At(read)
			if want := time.Second + time.Duration(read)*time.Microsecond; at != want || m.Output() != (read%3 != 0) || m.Answer() != m.Output() {
				t.Fatalf("entry %d: %v %v, want %v %v", read, at, m, want, read%3 != 0)
			}
		}
		select {
		case <-done:
		default:
		}
	}
	<-done
	if s, ok := l.Start(); !ok || s != time.Second {
		t.Fatalf("start %v %v", s, ok)
	}
	gaps := 0
	l.ITLs(func(d time.Duration) {
		if d != time.Microsecond {
			t.Fatalf("gap %v", d)
		}
		gaps++
	})
	if gaps != n-1 {
		t.Fatalf("%d gaps", gaps)
	}
	l.Begin(start)
	if l.Len() != 0 {
		t.Fatalf("%d entries after a new Begin", l.Len())
	}
	var nilLive *Live
	nilLive.Begin(start) // a request function may be given none
	nilLive.Add(start, 0, Answer)
	nilLive.ITLs(func(time.Duration) { t.Fatal("a gap from no Live") })
}
