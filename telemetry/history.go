package telemetry

import "time"

// maxReadings bounds the whole-run record of readings: a day at one a
// second (about 6 MB), the oldest dropped past it.
const maxReadings = 24 * 3600

// Reading is the server's and the GPUs' side at one second of the run, as
// the reports draw it over time. The scraper keeps only five minutes of
// full readings (the longest window); this is the compact record of the
// whole run, at most one a second.
type Reading struct {
	At time.Time
	// The server's side (HasServer false when not read this second).
	HasServer        bool
	Running, Waiting float64
	// KVUsage is 0..1 (HasKV false when not reported).
	KVUsage float64
	HasKV   bool
	// GenTokens is the server's cumulative count of generated tokens.
	GenTokens float64
	// The GPUs' side (HasGPU false when not read this second): power
	// summed over the GPUs, utilisation their mean.
	HasGPU  bool
	PowerW  float64
	UtilPct float64
}

// readingLocked returns the reading of at's second, the newest one or a
// new one.
func (s *Scraper) readingLocked(at time.Time) *Reading {
	sec := at.Truncate(time.Second)
	if n := len(s.hist); n > 0 && s.hist[n-1].At.Equal(sec) {
		return &s.hist[n-1]
	}
	if len(s.hist) >= maxReadings {
		s.hist = append(s.hist[:0], s.hist[maxReadings/10:]...) // a tenth at once: one copy in hours
	}
	s.hist = append(s.hist, Reading{At: sec})
	return &s.hist[len(s.hist)-1]
}

func (s *Scraper) recordServerLocked(at time.Time, srv Server) {
	r := s.readingLocked(at)
	r.HasServer, r.Running, r.Waiting, r.KVUsage, r.HasKV, r.GenTokens = true, srv.Running.V, srv.Waiting.V, srv.KVUsage.V, srv.KVUsage.Has, srv.GenTokens.V
}

func (s *Scraper) recordGPULocked(smp Sample) {
	if len(smp.GPUs) == 0 {
		return
	}
	r := s.readingLocked(smp.At)
	r.HasGPU, r.PowerW, r.UtilPct = true, smp.Power(), 0
	for _, g := range smp.GPUs {
		r.UtilPct += g.UtilPct / float64(len(smp.GPUs))
	}
}

// History returns the readings of the whole run, at most one a second,
// oldest first.
func (s *Scraper) History() []Reading {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Reading(nil), s.hist...)
}
