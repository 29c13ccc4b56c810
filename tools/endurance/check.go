package endurance

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Bounds on what a run may show; zero values take the defaults.
type Bounds struct {
	// Growth is how far the Go heap's peak over the last third may exceed
	// its peak over the middle third: a factor and an allowance (1.25 and
	// 64 MiB: a huge-line fault's buffer grows to 1 MiB by doubling, and
	// a few can be in flight at once). The
	// first third is warm-up: pools, idle connections, the rolling window
	// and five minutes of history filling. The heap, not the resident
	// memory: a leak shows in the heap, while the resident memory also
	// holds pages the runtime returns lazily and, under -race, the race
	// detector's shadow of every allocation (TestEndurance saw it jump
	// 291 -> 395 MiB in one 30 s run under -race with the heap flat).
	GrowthFactor float64
	GrowthSlack  int64
	// IdleSlack is how many more goroutines the paused, drained dashboard
	// may hold at the end than early on (8), once two goroutines (the
	// transport's read and write loops) are allowed for each extra open
	// file: the keep-alive pool keeps an idle connection for 90 s, so
	// connections opened while K doubled the load may still be there.
	IdleSlack int
	// ExtraConns is how many more files and sockets may be open at the end
	// than early on (the concurrency K added, plus 4 when zero).
	ExtraConns int
	// Classes must each have been counted at least once.
	Classes []string
}

// Check says whether the run held: memory flat, no goroutines left behind,
// every expected class counted, requests still finishing in the last third
// and a clean exit.
func (r *Result) Check(b Bounds) error {
	if b.GrowthFactor == 0 {
		b.GrowthFactor, b.GrowthSlack = 1.25, 64<<20
	}
	if b.IdleSlack == 0 {
		b.IdleSlack = 8
	}
	var errs []error
	n := len(r.Samples)
	if n < 6 {
		return fmt.Errorf("endurance: %d samples, too few to judge", n)
	}
	mid, last := r.Samples[n/3:2*n/3], r.Samples[2*n/3:]
	if m, l := peak(mid, heap), peak(last, heap); float64(l) > float64(m)*b.GrowthFactor+float64(b.GrowthSlack) {
		errs = append(errs, fmt.Errorf("the Go heap grew: peak %d MiB over the middle third, %d MiB over the last", m>>20, l>>20))
	}
	extraFDs := r.IdleFDsEnd - r.IdleFDsEarly
	if extraFDs > b.ExtraConns+4 {
		errs = append(errs, fmt.Errorf("files or sockets left open: %d paused and drained early, %d at the end", r.IdleFDsEarly, r.IdleFDsEnd))
	}
	if extra := r.IdleEnd - r.IdleEarly - 2*max(extraFDs, 0); extra > b.IdleSlack {
		errs = append(errs, fmt.Errorf("goroutines left behind: %d paused and drained early, %d at the end, %d more open files",
			r.IdleEarly, r.IdleEnd, extraFDs))
	}
	end := r.Samples[n-1].Classes
	for _, c := range b.Classes {
		if end[c] == 0 {
			errs = append(errs, fmt.Errorf("no request counted as %s (counted: %v)", c, end))
		}
	}
	if total(end) <= total(r.Samples[2*n/3].Classes) {
		errs = append(errs, errors.New("no request finished in the last third"))
	}
	if r.Exit != "EXITED 0" {
		errs = append(errs, fmt.Errorf("the dashboard quit with %q", r.Exit))
	}
	return errors.Join(errs...)
}

func rss(s Sample) int64  { return s.RSS }
func heap(s Sample) int64 { return s.Heap }

func peak(ss []Sample, f func(Sample) int64) int64 {
	var m int64
	for _, s := range ss {
		m = max(m, f(s))
	}
	return m
}

func total(c map[string]float64) float64 {
	var t float64
	for _, v := range c {
		t += v
	}
	return t
}

// Requests is how many requests had finished, in every class.
func (s Sample) Requests() float64 { return total(s.Classes) }

// Summary is a few lines of Markdown: the requests by class, memory and
// goroutines by thirds of the run, and the key presses' latency.
func (r *Result) Summary() string {
	var b strings.Builder
	n := len(r.Samples)
	if n == 0 {
		return "no samples\n"
	}
	end := r.Samples[n-1]
	classes := make([]string, 0, len(end.Classes))
	for c, v := range end.Classes {
		if v > 0 {
			classes = append(classes, c)
		}
	}
	slices.Sort(classes)
	parts := make([]string, len(classes))
	for i, c := range classes {
		parts[i] = fmt.Sprintf("%s %.0f", c, end.Classes[c])
	}
	fmt.Fprintf(&b, "%.0f requests over %v (%.0f/s): %s.\n\n", total(end.Classes), end.At.Round(time.Second),
		total(end.Classes)/end.At.Seconds(), strings.Join(parts, ", "))
	b.WriteString("| part of the run | resident memory, peak | Go heap in use, peak | goroutines, peak |\n|---|---:|---:|---:|\n")
	for i, name := range []string{"first third", "middle third", "last third"} {
		part := r.Samples[i*n/3 : (i+1)*n/3]
		if len(part) == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s (to %v) | %d MiB | %d MiB | %d |\n", name, part[len(part)-1].At.Round(time.Second),
			peak(part, rss)>>20, peak(part, heap)>>20,
			peak(part, func(s Sample) int64 { return int64(s.Goroutines) }))
	}
	if r.Missed > 0 {
		fmt.Fprintf(&b, "\n%d readings missed (the exporter took over 5 s to answer).", r.Missed)
	}
	fmt.Fprintf(&b, "\nWith the load paused and drained: %d goroutines and %d open files early, %d and %d at the end.", r.IdleEarly, r.IdleFDsEarly, r.IdleEnd, r.IdleFDsEnd)
	if len(r.KeyLatency) > 0 {
		k := slices.Clone(r.KeyLatency)
		slices.Sort(k)
		fmt.Fprintf(&b, " %d key presses (K and J in turn) reached the screen in %v median, %v at most (tmux's send-keys and capture-pane included).",
			len(k), k[len(k)/2].Round(time.Millisecond), k[len(k)-1].Round(time.Millisecond))
	}
	b.WriteString("\n")
	return b.String()
}
