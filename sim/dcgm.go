package sim

import (
	"bufio"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"
)

// power simulates GPU power in DCGM's names: each GPU draws IdleW plus
// BusyW times how full the batch is (a little less on later GPUs, so they
// differ), and its energy counter integrates that draw.
type power struct {
	mu       sync.Mutex
	last     time.Time
	energyMJ []float64
}

func (s *Server) gpuWatts(i int) float64 {
	util := math.Min(float64(s.sched.nRunning.Load())/float64(s.p.Slots), 1)
	return s.p.IdleW + s.p.BusyW*util*(1-0.03*float64(i%4))
}

// handleDCGM serves a DCGM exporter's page for the simulated GPUs.
func (s *Server) handleDCGM(w http.ResponseWriter, _ *http.Request) {
	s.power.mu.Lock()
	now := time.Now()
	if len(s.power.energyMJ) != s.p.GPUs {
		s.power.energyMJ = make([]float64, s.p.GPUs)
		s.power.last = now
	}
	dt := now.Sub(s.power.last).Seconds()
	s.power.last = now
	watts := make([]float64, s.p.GPUs)
	for i := range watts {
		watts[i] = s.gpuWatts(i)
		s.power.energyMJ[i] += watts[i] * dt * 1000
	}
	energy := append([]float64(nil), s.power.energyMJ...)
	s.power.mu.Unlock()

	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	util := math.Min(float64(s.sched.nRunning.Load())/float64(s.p.Slots), 1)
	kv := float64(s.sched.kvUsedG.Load()) / float64(s.p.KVTokens)
	metric := func(name, help, typ string, val func(i int) float64) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		for i := range s.p.GPUs {
			fmt.Fprintf(bw, "%s{gpu=\"%d\",UUID=\"GPU-sim-%04d\",device=\"nvidia%d\",modelName=\"infertop sim GPU\",Hostname=\"sim\"} %g\n", name, i, i, i, val(i))
		}
	}
	metric("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", "gauge", func(i int) float64 { return math.Round(watts[i]*100) / 100 })
	metric("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).", "counter", func(i int) float64 { return math.Round(energy[i]) })
	metric("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", "gauge", func(i int) float64 { return math.Round(util * 100 * (1 - 0.03*float64(i%4))) })
	metric("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", "gauge", func(int) float64 { return math.Round(20000 + 100000*kv) })
	metric("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", "gauge", func(i int) float64 { return math.Round(35 + 40*util - float64(i%3)) })
	metric("DCGM_FI_DEV_SM_CLOCK", "SM frequency (in MHz).", "gauge", func(int) float64 { return 1980 })
}
