package telemetry

import (
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/slo"
)

// Figures is what the window of a snapshot shows once the server's and the
// GPUs' side is joined to it: the one place telemetry meets a snapshot, so
// the dashboard, the exporter and the SLO checks read the same numbers.
type Figures struct {
	// Window is the window's figures for the SLOs, the energy per token
	// among them when the GPUs are read.
	Window slo.Figures
	// Server is the server's and the GPUs' side over the window; Scraped
	// is false when nothing is read.
	Server  View
	Scraped bool
}

// Join joins a telemetry view (nil: nothing is read) to s's window.
func Join(s load.Snapshot, v *View) Figures {
	f := Figures{Window: slo.FromWindow(s)}
	if v != nil {
		f.Server, f.Scraped = *v, true
		f.Window.JoulesPerToken, f.Window.HasEnergy = PerToken(f.Server, s.OutTokPerSec)
	}
	return f
}
