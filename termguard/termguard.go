// Package termguard keeps the terminal usable when the dashboard panics:
// it installs a crash handler that stops the bubbletea program, restores
// the terminal (raw mode off, the main screen back) and only then prints
// the panic, so the message is not lost in the alternate screen. It is
// apart from crash so that crash, which every goroutine of the engine
// defers, stays stdlib-only and the engine links no terminal library.
package termguard

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	xterm "github.com/charmbracelet/x/term"

	"github.com/infertop/infertop/crash"
)

// Terminal restores the terminal and prints a panic from any goroutine of
// the dashboard, then ends the process with status 2 (as Go's own panic).
type Terminal struct {
	mu   sync.Mutex
	prog *tea.Program
	ran  chan struct{} // closed once Run has returned or unwound
}

// Install installs the handler for the dashboard on term (crash.Handle);
// crash.Handle(nil) uninstalls it.
func Install(term *os.File, stderr io.Writer) *Terminal {
	g := &Terminal{ran: make(chan struct{})}
	state, _ := xterm.GetState(os.Stdin.Fd())
	crash.Handle(func(v any, stack []byte) {
		g.mu.Lock()
		p := g.prog
		g.mu.Unlock()
		if p != nil {
			p.Kill() // bubbletea restores the terminal as Run returns
			select {
			case <-g.ran:
			case <-time.After(2 * time.Second):
			}
			// A panic in the event loop unwinds Run without stopping the
			// renderer, whose ticker would flush a last frame onto the main
			// screen over the panic's first lines: stop it (and the input
			// reader) first. After a clean Run it has stopped already.
			_ = p.ReleaseTerminal()
		}
		// Again by hand, for a panic in the event loop itself, which
		// unwinds Run without its cleanup: bracketed paste and mouse off,
		// the cursor shown, the main screen back, the tty's modes restored.
		term.WriteString("\x1b[?2004l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?25h\x1b[?1049l")
		if state != nil {
			xterm.Restore(os.Stdin.Fd(), state)
		}
		fmt.Fprintf(stderr, "infertop: panic: %v\n\n%s\nThe terminal was restored. This is a bug in infertop: please report it with the lines above.\n", v, stack)
		os.Exit(2)
	})
	return g
}

// Run runs the program; a panic in it goes to the handler.
func (g *Terminal) Run(p *tea.Program) (err error) {
	g.mu.Lock()
	g.prog = p
	g.mu.Unlock()
	func() {
		defer crash.Recover()
		defer close(g.ran) // before crash.Recover, which waits for it
		_, err = p.Run()
	}()
	if crash.Crashing() { // Run returned because the handler killed it
		select {}
	}
	return err
}
