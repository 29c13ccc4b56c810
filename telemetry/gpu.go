package telemetry

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// GPU is one reading of one GPU.
type GPU struct {
	Index string
	// PowerW is the draw in watts; EnergyJ the device's energy counter in
	// joules since its driver loaded (HasEnergy false when not reported).
	PowerW    float64
	EnergyJ   float64
	HasEnergy bool
	// UtilPct is GPU utilisation, MemUsedMiB the memory used, TempC the
	// temperature, SMClockMHz the SM clock.
	UtilPct, MemUsedMiB, TempC, SMClockMHz float64
}

// label returns a metric's label value.
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	}
	return m.GetUntyped().GetValue()
}

// parse reads the families wanted of a Prometheus text page, within the
// bounds of filterPage.
func parse(r io.Reader, wanted func(string) bool) (map[string]*dto.MetricFamily, error) {
	page, err := filterPage(r, wanted)
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(page))
	if err != nil {
		return nil, fmt.Errorf("metrics page: %w", err)
	}
	return fams, nil
}

// ParseDCGM reads a DCGM exporter page: one GPU per "gpu" label.
// DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION is in millijoules.
func ParseDCGM(r io.Reader) ([]GPU, error) {
	fields := map[string]func(*GPU, float64){
		"DCGM_FI_DEV_POWER_USAGE":              func(g *GPU, v float64) { g.PowerW = v },
		"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": func(g *GPU, v float64) { g.EnergyJ, g.HasEnergy = v/1000, true },
		"DCGM_FI_DEV_GPU_UTIL":                 func(g *GPU, v float64) { g.UtilPct = v },
		"DCGM_FI_DEV_FB_USED":                  func(g *GPU, v float64) { g.MemUsedMiB = v },
		"DCGM_FI_DEV_GPU_TEMP":                 func(g *GPU, v float64) { g.TempC = v },
		"DCGM_FI_DEV_SM_CLOCK":                 func(g *GPU, v float64) { g.SMClockMHz = v },
	}
	fams, err := parse(r, func(name string) bool { return fields[name] != nil })
	if err != nil {
		return nil, err
	}
	byGPU := map[string]*GPU{}
	get := func(m *dto.Metric) *GPU {
		idx := label(m, "gpu")
		if g, ok := byGPU[idx]; ok {
			return g
		}
		g := &GPU{Index: idx}
		byGPU[idx] = g
		return g
	}
	for name, set := range fields {
		for _, m := range fams[name].GetMetric() {
			g := get(m)
			if len(byGPU) > maxGPUs {
				return nil, fmt.Errorf("%w: more than %d GPUs on the DCGM page", errPage, maxGPUs)
			}
			set(g, value(m))
		}
	}
	out := make([]GPU, 0, len(byGPU))
	for _, g := range byGPU {
		g.setAside()
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	if len(out) == 0 {
		return nil, fmt.Errorf("no DCGM_FI_DEV_* metrics on the page")
	}
	return out, nil
}

// NvidiaSMIQuery is the --query-gpu list parseNvidiaSMI reads, in order.
const NvidiaSMIQuery = "index,power.draw,total_energy_consumption,utilization.gpu,memory.used,temperature.gpu,clocks.sm"

// ParseNvidiaSMILine reads one CSV line of `nvidia-smi
// --query-gpu=NvidiaSMIQuery --format=csv,noheader,nounits`. Energy is in
// millijoules; "[N/A]" fields are left out.
func ParseNvidiaSMILine(line string) (GPU, error) {
	f := strings.Split(line, ",")
	if len(f) != 7 {
		return GPU{}, fmt.Errorf("nvidia-smi: %d fields in %q, want 7", len(f), line)
	}
	num := func(s string) (float64, bool) {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		return v, err == nil
	}
	g := GPU{Index: strings.TrimSpace(f[0])}
	var ok bool
	if g.PowerW, ok = num(f[1]); !ok {
		return GPU{}, fmt.Errorf("nvidia-smi: no power draw in %q", line)
	}
	if e, ok := num(f[2]); ok {
		g.EnergyJ, g.HasEnergy = e/1000, true
	}
	g.UtilPct, _ = num(f[3])
	g.MemUsedMiB, _ = num(f[4])
	g.TempC, _ = num(f[5])
	g.SMClockMHz, _ = num(f[6])
	g.setAside()
	return g, nil
}

// counterRise is an energy counter's rise from a to b: a counter that went
// down was reset (a driver reload), and b is the energy since.
func counterRise(a, b float64) float64 {
	if b < a {
		return b
	}
	return b - a
}

// Sample is a reading of every GPU at one time.
type Sample struct {
	At   time.Time
	GPUs []GPU
}

// Power sums the draw of every GPU.
func (s Sample) Power() float64 {
	w := 0.0
	for _, g := range s.GPUs {
		w += g.PowerW
	}
	return w
}

// Energy is the joules spent between samples a and b (b later), summed over
// GPUs: from each GPU's energy counter where both readings have one (a
// counter that went down was reset: the new reading is the energy since),
// else from the power, integrated by the trapezoid rule. source says which.
// A counter's rise past maxGPUWatts over the time between the readings
// cannot be true: that GPU's energy is then its power over the time.
func Energy(a, b Sample) (joules float64, source string) {
	dt := b.At.Sub(a.At).Seconds()
	prev := map[string]GPU{}
	for _, g := range a.GPUs {
		prev[g.Index] = g
	}
	counters, integrated := 0, 0
	for _, g := range b.GPUs {
		p, ok := prev[g.Index]
		switch {
		case ok && g.HasEnergy && p.HasEnergy && counterRise(p.EnergyJ, g.EnergyJ) <= maxGPUWatts*max(dt, 0):
			joules += counterRise(p.EnergyJ, g.EnergyJ)
			counters++
		case ok:
			joules += (g.PowerW + p.PowerW) / 2 * dt
			integrated++
		}
	}
	switch {
	case counters > 0 && integrated == 0:
		source = "energy counter"
	case integrated > 0 && counters == 0:
		source = "power × time"
	case counters > 0:
		source = "energy counter and power × time"
	}
	return joules, source
}
