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
// BusyW times how full its pod's batch is (a little less on later GPUs,
// so they differ), and its energy counter integrates that draw. A canary
// is a replica on GPUs of its own: the page lists the stable pod's GPUs,
// then as many more for the canary's (Hostname "sim-canary"), from the
// start, so the count does not change under a reader and the endpoint's
// energy covers both.
type power struct {
	mu       sync.Mutex
	last     time.Time
	energyMJ []float64
}

func (s *Server) gpuWatts(i int, util []float64) float64 {
	return s.p.IdleW + s.p.BusyW*util[i/s.p.GPUs]*(1-0.03*float64(i%4))
}

// handleDCGM serves a DCGM exporter's page for the simulated GPUs.
func (s *Server) handleDCGM(w http.ResponseWriter, _ *http.Request) {
	pods := s.pods()
	gpus := s.p.GPUs * len(pods)
	// Per pod: how full its batch and its KV cache are.
	util, kv := make([]float64, len(pods)), make([]float64, len(pods))
	for i, sc := range pods {
		util[i] = math.Min(float64(sc.nRunning.Load())/float64(s.p.Slots), 1)
		kv[i] = float64(sc.kvUsedG.Load()) / float64(s.p.KVTokens)
	}
	s.power.mu.Lock()
	now := time.Now()
	if len(s.power.energyMJ) != gpus {
		s.power.energyMJ = make([]float64, gpus)
		s.power.last = now
	}
	dt := now.Sub(s.power.last).Seconds()
	s.power.last = now
	watts := make([]float64, gpus)
	for i := range watts {
		watts[i] = s.gpuWatts(i, util)
		s.power.energyMJ[i] += watts[i] * dt * 1000
	}
	energy := append([]float64(nil), s.power.energyMJ...)
	s.power.mu.Unlock()

	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	host := [...]string{"sim", "sim-canary"}
	metric := func(name, help, typ string, val func(i int) float64) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		for i := range gpus {
			fmt.Fprintf(bw, "%s{gpu=\"%d\",UUID=\"GPU-sim-%04d\",device=\"nvidia%d\",modelName=\"infertop sim GPU\",Hostname=\"%s\"} %g\n", name, i, i, i, host[i/s.p.GPUs], val(i))
		}
	}
	metric("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", "gauge", func(i int) float64 { return math.Round(watts[i]*100) / 100 })
	metric("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).", "counter", func(i int) float64 { return math.Round(energy[i]) })
	metric("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", "gauge", func(i int) float64 { return math.Round(util[i/s.p.GPUs] * 100 * (1 - 0.03*float64(i%4))) })
	metric("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", "gauge", func(i int) float64 { return math.Round(20000 + 100000*kv[i/s.p.GPUs]) })
	metric("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", "gauge", func(i int) float64 { return math.Round(35 + 40*util[i/s.p.GPUs] - float64(i%3)) })
	metric("DCGM_FI_DEV_SM_CLOCK", "SM frequency (in MHz).", "gauge", func(int) float64 { return 1980 })
}
