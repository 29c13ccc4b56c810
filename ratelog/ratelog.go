// Package ratelog bounds the lines a door open to anyone writes: an SSH
// server's refusals, an agent's refused requests. Without a bound a flood
// of requests would fill the disk (an agent wrote 1.16 GB of stderr in
// 10 s from 15 KB method names); the lines past it are counted and the
// count written when the second is over. Each line passes the one
// sanitiser and is cut to MaxLine.
package ratelog

import (
	"fmt"
	"sync"
	"time"

	"github.com/infertop/infertop/sanitize"
)

// MaxLine bounds a line's length in bytes: what a peer sent (a method, a
// path, a user name) is in it.
const MaxLine = 512

// Limiter writes at most PerSecond lines a second; its methods are safe
// from any goroutine. Its one timer (the count of a second's lines left
// out, written even if nothing follows) is stopped by Flush.
type Limiter struct {
	perSecond int
	write     func(line string)

	mu      sync.Mutex
	second  time.Time
	lines   int
	dropped int
	timer   *time.Timer
}

// New is a limiter of perSecond lines a second (at least 1) to write.
func New(perSecond int, write func(line string)) *Limiter {
	return &Limiter{perSecond: max(perSecond, 1), write: write}
}

// Logf writes a line, if this second has room for it; else counts it.
func (l *Limiter) Logf(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if now.Sub(l.second) >= time.Second {
		l.flushLocked()
		l.second, l.lines = now, 0
	}
	if l.lines >= l.perSecond {
		l.dropped++
		if l.timer == nil {
			l.timer = time.AfterFunc(l.second.Add(time.Second).Sub(now), l.Flush)
		}
		return
	}
	l.lines++
	l.write(Line(fmt.Sprintf(format, a...)))
}

// Flush writes the count of the lines left out, if any, now.
func (l *Limiter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
}

func (l *Limiter) flushLocked() {
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	if l.dropped > 0 {
		l.write(fmt.Sprintf("%d lines left out (more than %d a second)", l.dropped, l.perSecond))
		l.dropped = 0
	}
}

// Line is s sanitised and cut to MaxLine bytes (sanitize.Short).
func Line(s string) string { return sanitize.Short(s, MaxLine) }
