package sshserver

import (
	"fmt"
	"time"
)

// LogLinesPerSecond bounds the lines written to Config.Log in a second.
// Anyone who can reach the port makes lines (a refused key, a connection
// over the bounds, a handshake past its deadline), so without a bound a
// flood of connections would fill the disk; the lines past it are counted
// and the count written when the second is over.
const LogLinesPerSecond = 20

// logf writes a line to the log, if this second has room for it.
func (s *Server) logf(format string, a ...any) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	now := time.Now()
	if now.Sub(s.logSecond) >= time.Second {
		s.flushLocked(now)
		s.logSecond, s.logLines = now, 0
	}
	if s.logLines >= LogLinesPerSecond {
		s.logDropped++
		if s.logTimer == nil { // the count is written even if nothing follows
			s.logTimer = time.AfterFunc(s.logSecond.Add(time.Second).Sub(now), s.flushLog)
		}
		return
	}
	s.logLines++
	s.writeLocked(now, format, a...)
}

// flushLog writes the count of the lines left out, if any.
func (s *Server) flushLog() {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	s.flushLocked(time.Now())
}

func (s *Server) flushLocked(now time.Time) {
	if s.logTimer != nil {
		s.logTimer.Stop()
		s.logTimer = nil
	}
	if s.logDropped > 0 {
		s.writeLocked(now, "%d lines left out (more than %d a second)", s.logDropped, LogLinesPerSecond)
		s.logDropped = 0
	}
}

func (s *Server) writeLocked(now time.Time, format string, a ...any) {
	fmt.Fprintf(s.cfg.Log, "%s infertop ssh: "+format+"\n", append([]any{now.Format(time.TimeOnly)}, a...)...)
}
