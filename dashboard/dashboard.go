// Package dashboard builds the live dashboard of a followed load of any
// kind: the ui's model over a session's snapshots and controller, the s
// key's save, a pair's canary, the f key's capacity searches, in a
// bubbletea program on a terminal. infertop and infertop ssh --local run
// it on this terminal; sshserver builds each SSH session's view from the
// same ViewOptions. ui knows nothing of sessions; this is where they meet
// (a session of agents adds their panel).
package dashboard

import (
	"context"
	"os"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/session"
	"github.com/infertop/infertop/ui"
)

// DefaultSaveTimeout bounds an s key's save: the server's description
// and the engine's history, read within it.
const DefaultSaveTimeout = 5 * time.Second

// Options are a dashboard's own settings. Zero fields are the defaults.
type Options struct {
	// Theme names the theme; ReportDir is where the s key saves.
	Theme, ReportDir string
	// Find is the template of the capacity searches (nil: the defaults,
	// over the loop the load runs); with objectives, one starts at once.
	Find *capacity.Search
	// SaveTimeout bounds an s key's save (0: DefaultSaveTimeout).
	SaveTimeout time.Duration
	// NoColor draws without colour (NO_COLOR).
	NoColor bool
	// Input is the terminal read (nil: the program's default, stdin).
	Input *os.File
	// Wrap wraps the model (to make it panic, in tests).
	Wrap func(tea.Model) tea.Model
	// Notice is said in the watch's title line (WatchProgram).
	Notice string
}

// ViewOptions are the options of every view of s, local or over SSH,
// without a subscription (each view makes its own): the first side's
// objectives and figures, the s key's save, and what the session
// compares.
func ViewOptions(s session.Session, o Options) ui.Options {
	main := s.Sides()[0]
	v := s.View()
	timeout := o.SaveTimeout
	if timeout <= 0 {
		timeout = DefaultSaveTimeout
	}
	uo := ui.Options{
		Theme: o.Theme, Objectives: main.Objectives(), Figures: main.Figures, Compare: v.Compare, Groups: v.Groups,
		Save: func(snap load.Snapshot) (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			return s.Save(ctx, snap, o.ReportDir)
		},
	}
	if as, ok := s.(session.AgentsFollowed); ok { // the agents' panel; the keys move every agent
		uo.Agents = func() ui.Agents { return agentsPanel(as.Agents()) }
	}
	return uo
}

// agentsPanel is v as the dashboard's agents panel shows it.
func agentsPanel(v *report.AgentsJSON) ui.Agents {
	out := ui.Agents{Source: v.Source, Of: v.Of, Missing: v.Missing}
	for _, r := range v.Agents {
		row := ui.AgentRow{Index: r.Index, Addr: r.Address, State: r.State, Why: r.Why, Sent: r.Sent, Completed: r.Completed, Failed: r.Failed,
			Incomplete: r.Incomplete, InFlight: r.InFlight, ClockOffset: time.Duration(r.ClockOffsetMS * float64(time.Millisecond)), Seen: r.LastSeen != nil}
		if r.TTFTP99MS != nil {
			row.TTFTP99 = time.Duration(*r.TTFTP99MS * float64(time.Millisecond))
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}

// Program builds the dashboard program of s on term, of every kind of
// load. The program ends with ctx; done ends its subscriptions once it
// has run. An error is the ui's refusal of the options (a bad theme).
func Program(ctx context.Context, s session.Session, term *os.File, d Options) (p *tea.Program, done func(), err error) {
	rd := lipgloss.NewRenderer(term)
	if d.NoColor {
		rd.SetColorProfile(termenv.Ascii)
	}
	o := ViewOptions(s, d)
	main := s.Sides()[0]
	snaps, unsubscribe := main.Subscribe()
	o.Renderer, o.Snapshots = rd, snaps
	v := s.View()
	if v.Canary != nil {
		canary, unsubscribeCanary := v.Canary()
		o.Canary = canary
		base := unsubscribe
		unsubscribe = func() { base(); unsubscribeCanary() }
	}
	closeSearcher := func() {}
	if v.Search != nil { // none in a pair: it would leave the canary behind (its f key says so)
		searcher := searcher(v.Search, main, d.Find, &o)
		closeSearcher = searcher.Close
	}
	model, err := ui.New(s.Controller(), o)
	if err != nil {
		closeSearcher()
		unsubscribe()
		return nil, nil, err
	}
	var m tea.Model = model
	if d.Wrap != nil {
		m = d.Wrap(m)
	}
	// Panics are crash's, not bubbletea's: bubbletea would print a panic in
	// a command's goroutine into the alternate screen, where it is lost.
	// No signal handler of bubbletea's: the command's own ends ctx (and so
	// the program), where bubbletea's, racing it, could block on sending
	// its message to a program already shutting down (SIGINT hung it in
	// 2 of 4 tries). Ctrl+C typed is a key in the raw terminal, the q key.
	opts := []tea.ProgramOption{tea.WithAltScreen(), tea.WithOutput(term), tea.WithContext(ctx), tea.WithoutCatchPanics(), tea.WithFPS(ui.FPS),
		tea.WithoutSignalHandler()}
	if d.Input != nil {
		opts = append(opts, tea.WithInput(d.Input))
	}
	p = tea.NewProgram(m, opts...)
	return p, func() { closeSearcher(); unsubscribe() }, nil
}

// searcher is the dashboard's capacity searches over eng, its f key's
// (and --find-max's, at once, from find), set in o; the dashboard's
// command closes it. Without find the searches are the defaults, over
// the loop the load runs.
func searcher(eng capacity.Engine, side session.Side, find *capacity.Search, o *ui.Options) *capacity.Live {
	tmpl := capacity.Search{}
	if find != nil {
		tmpl = *find
	} else if k, ok := eng.(load.KnobReader); ok && k.Knobs().Mode == load.OpenLoop {
		tmpl.Over = capacity.Rate
	}
	s := capacity.NewLive(tmpl, eng, side.Subscribe)
	o.Finder, o.FindMax = s, tmpl.Objectives
	return s
}
