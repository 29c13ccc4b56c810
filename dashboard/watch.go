package dashboard

import (
	"context"
	"os"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/infertop/infertop/ui"
	"github.com/infertop/infertop/watch"
)

// WatchProgram builds the dashboard program of a watch on term. The
// program ends with ctx or the watch; done ends its subscription.
func WatchProgram(ctx context.Context, w *watch.Watch, term *os.File, d Options) (p *tea.Program, done func()) {
	rd := lipgloss.NewRenderer(term)
	if d.NoColor {
		rd.SetColorProfile(termenv.Ascii)
	}
	snaps, unsubscribe := w.Subscribe()
	var m tea.Model = ui.NewWatch(snaps, rd).WithNotice(d.Notice)
	if d.Wrap != nil {
		m = d.Wrap(m)
	}
	// The command's signal handler ends ctx (see Program).
	opts := []tea.ProgramOption{tea.WithAltScreen(), tea.WithOutput(term), tea.WithContext(ctx), tea.WithoutCatchPanics(), tea.WithFPS(ui.FPS),
		tea.WithoutSignalHandler()}
	if d.Input != nil {
		opts = append(opts, tea.WithInput(d.Input))
	}
	return tea.NewProgram(m, opts...), unsubscribe
}

// WatchSession builds the watch's dashboard for one SSH session
// (sshserver.Config.Model): a subscription of its own, drawn with the
// session's renderer.
func WatchSession(w *watch.Watch) func(*lipgloss.Renderer) (tea.Model, func()) {
	return func(rd *lipgloss.Renderer) (tea.Model, func()) {
		snaps, unsubscribe := w.Subscribe()
		return ui.NewWatch(snaps, rd), unsubscribe
	}
}
