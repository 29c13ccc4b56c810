package report

import (
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/telemetry"
)

// Energy is what the GPUs spent, for the run and each phase, and where the
// figures came from.
type Energy struct {
	// Source is "DCGM" or "nvidia-smi".
	Source string
	Run    EnergyFigures
	Phases map[int]EnergyFigures
}

// EnergyFigures is the energy of one stretch of the run.
type EnergyFigures struct {
	Joules, AvgWatts, JoulesPerToken, TokensPerJoule float64
	// From is "energy counter" or "power × time".
	From string
	OK   bool
}

func figures(j float64, from string, d time.Duration, outTokens int64) EnergyFigures {
	f := EnergyFigures{Joules: j, From: from, OK: from != ""}
	if secs := d.Seconds(); secs > 0 {
		f.AvgWatts = j / secs
	}
	if outTokens > 0 && j > 0 {
		f.JoulesPerToken = j / float64(outTokens)
		f.TokensPerJoule = float64(outTokens) / j
	}
	return f
}

// EnergyOf reads the energy of the run and of each phase from the
// scraper's readings; start is the run's start. Nil without GPU telemetry.
func EnergyOf(sc *telemetry.Scraper, start time.Time, s load.Snapshot) *Energy {
	if sc == nil || !sc.HasGPU() {
		return nil
	}
	runStart, runEnd := start.Add(s.Run.Start), start.Add(s.Elapsed)
	j, from, ok := sc.EnergyBetween(runStart, runEnd)
	if !ok {
		return nil
	}
	e := &Energy{Source: sc.View(time.Minute).GPUSource(), Phases: map[int]EnergyFigures{}}
	e.Run = figures(j, from, runEnd.Sub(runStart), s.Run.OutTokens)
	for _, p := range s.Phases {
		end := p.End
		if p.Current || end == 0 {
			end = s.Elapsed
		}
		if pj, pfrom, ok := sc.EnergyBetween(start.Add(p.Start), start.Add(end)); ok {
			e.Phases[p.ID] = figures(pj, pfrom, end-p.Start, p.OutTokens)
		}
	}
	return e
}

// PerToken gives the joules per output token of a phase (ID 0: the run),
// for energy_per_token objectives.
func (e *Energy) PerToken(p load.Phase) (float64, bool) {
	if e == nil {
		return 0, false
	}
	f := e.Run
	if p.ID != 0 {
		var ok bool
		if f, ok = e.Phases[p.ID]; !ok {
			return 0, false
		}
	}
	return f.JoulesPerToken, f.OK && f.JoulesPerToken > 0
}
