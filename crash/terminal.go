package crash

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	xterm "github.com/charmbracelet/x/term"
)

// Terminal restores the terminal and prints a panic from any goroutine of
// the dashboard, then ends the process with status 2 (as Go's own panic).
type Terminal struct {
	mu   sync.Mutex
	prog *tea.Program
	ran  chan struct{} // closed once Run has returned or unwound
}

// GuardTerminal installs the handler for the dashboard on term; Handle(nil)
// uninstalls it.
func GuardTerminal(term *os.File, stderr io.Writer) *Terminal {
	g := &Terminal{ran: make(chan struct{})}
	state, _ := xterm.GetState(os.Stdin.Fd())
	Handle(func(v any, stack []byte) {
		g.mu.Lock()
		p := g.prog
		g.mu.Unlock()
		if p != nil {
			p.Kill() // bubbletea restores the terminal as Run returns
			select {
			case <-g.ran:
			case <-time.After(2 * time.Second):
			}
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
		defer Recover()
		defer close(g.ran) // before Recover, which waits for it
		_, err = p.Run()
	}()
	if Crashing() { // Run returned because the handler killed it
		select {}
	}
	return err
}
