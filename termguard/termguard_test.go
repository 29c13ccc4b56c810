package termguard

import (
	"bytes"
	"io"
	"os"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/infertop/infertop/crash"
)

// quits ends its program at once.
type quits struct{}

func (quits) Init() tea.Cmd                       { return tea.Quit }
func (quits) Update(tea.Msg) (tea.Model, tea.Cmd) { return quits{}, nil }
func (quits) View() string                        { return "" }

// TestRunWithoutPanic: a program that ends by itself returns through Run
// as it would without the guard, and nothing is printed. (The panic path
// ends the process: the root's TestPanicRestoresTerminal runs it in tmux.)
func TestRunWithoutPanic(t *testing.T) {
	var stderr bytes.Buffer
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	g := Install(devnull, &stderr)
	defer crash.Handle(nil)
	p := tea.NewProgram(quits{}, tea.WithInput(nil), tea.WithOutput(io.Discard), tea.WithoutSignalHandler())
	if err := g.Run(p); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if crash.Crashing() || stderr.Len() > 0 {
		t.Fatalf("crashing %v, stderr %q: nothing panicked", crash.Crashing(), stderr.String())
	}
}
