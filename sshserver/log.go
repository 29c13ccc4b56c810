package sshserver

import (
	"fmt"
	"time"

	"github.com/infertop/infertop/ratelog"
)

// LogLinesPerSecond bounds the lines written to Config.Log in a second.
// Anyone who can reach the port makes lines (a refused key, a connection
// over the bounds, a handshake past its deadline), so without a bound a
// flood of connections would fill the disk; the lines past it are counted
// and the count written when the second is over (ratelog).
const LogLinesPerSecond = 20

// newLog is the server's bounded log, each line after the time of day.
func (s *Server) newLog() *ratelog.Limiter {
	return ratelog.New(LogLinesPerSecond, func(line string) {
		fmt.Fprintf(s.cfg.Log, "%s infertop ssh: %s\n", time.Now().Format(time.TimeOnly), line)
	})
}

// logf writes a line to the log, if this second has room for it.
func (s *Server) logf(format string, a ...any) { s.log.Logf(format, a...) }
