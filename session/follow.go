package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"time"

	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/slo"
)

// Follower follows a headless run to its end, whatever its kind: a
// progress line on Stderr, the first signal drains and the second stops,
// the fail-fast gate. It is the one loop that does.
type Follower struct {
	// Stderr gets the progress lines; Live says it is a terminal (one
	// line, rewritten in place), else a line every ProgressEvery.
	Stderr        io.Writer
	Live          bool
	ProgressEvery time.Duration
	// Gate is the fail-fast rule.
	Gate Gate
	// Signals are the interrupts (SIGINT, SIGTERM): the first ends the
	// run with a drain, a second stops it.
	Signals <-chan os.Signal
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	lastLine time.Time
}

// Followed is what a follower saw: each side's last snapshot and the
// windows that broke its SLOs (fail-fast), and the live breaches that
// ended the run.
type Followed struct {
	Last      []load.Snapshot
	Breaches  [][]slo.Verdict
	StoppedBy []compare.Failure
	// Signals is how many interrupts it read: two stopped the run at
	// once, and ask for nothing more to wait on.
	Signals int
}

// Driver is a session that drives its load before it is followed to its
// end (a capacity search): Drive returns once it is over, or ctx ends.
type Driver interface {
	Drive(ctx context.Context, progress func(capacity.Progress)) error
}

// errInterrupted is the cause a signal cancels a drive with.
var errInterrupted = errors.New("interrupted")

func (f *Follower) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// Follow follows s to its end: a Driver's drive first (a signal ends it),
// then every side until it is done, or a second signal stops it.
func (f *Follower) Follow(s Session) Followed {
	if d, ok := s.(Driver); ok {
		f.drive(d)
		s.Finish("the capacity search ended")
	}
	f.lastLine = f.now() // the first progress line after ProgressEvery
	sides := s.Sides()
	out := Followed{Last: make([]load.Snapshot, len(sides)), Breaches: make([][]slo.Verdict, len(sides))}
	cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(f.Signals)}}
	for _, sd := range sides {
		ch, unsubscribe := sd.Subscribe()
		defer unsubscribe()
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	defer f.clear()
	said, failed := false, false
	for open := len(sides); open > 0; {
		chosen, v, ok := reflect.Select(cases)
		if chosen == 0 {
			out.Signals++
			if ending(out.Last) {
				fmt.Fprintf(f.Stderr, "\ninfertop: stopped: %d requests in flight cancelled\n", inFlight(out.Last))
				return out
			}
			s.Finish(load.EndInterrupted)
			continue
		}
		i := chosen - 1
		snap, _ := v.Interface().(load.Snapshot)
		if !ok || snap.Done {
			cases[chosen].Chan, open = reflect.Value{}, open-1 // a nil channel: never chosen again
		}
		if !ok {
			continue
		}
		out.Last[i] = snap
		if snap.Ending() && !said {
			said = true
			f.clear()
			fmt.Fprintf(f.Stderr, "infertop: run ended: %s\n", snap.DoneWhy)
		}
		if b := f.Gate.SLO(sides[i], snap); len(b) > 0 && !failed {
			out.Breaches[i], failed = b, true
			s.Finish("an SLO broke" + onSide(len(sides), i) + " (--fail-fast)")
		}
		if i != 0 || snap.Done {
			continue
		}
		line := progressLine(snap)
		if l, ok := liveLook(s); ok {
			line += "  ·  " + l.Line
			if stop := f.Gate.Regression(l, f.now()); len(stop) > 0 && !failed && !snap.Ending() {
				failed, out.StoppedBy = true, stop
				s.Finish(l.Regressed + " (--fail-fast)")
			}
		}
		f.progress(line)
	}
	return out
}

// drive runs d until it is over or a signal cancels it, with its
// progress on Stderr.
func (f *Follower) drive(d Driver) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var lastState string
	progress := func(pr capacity.Progress) { // on the drive's goroutine, while Follow only waits
		state := fmt.Sprint(pr.Step, pr.State)
		switch {
		case f.Live:
			fmt.Fprintf(f.Stderr, "\r\033[K%s", pr)
		case state != lastState || f.now().Sub(f.lastLine) >= f.ProgressEvery:
			fmt.Fprintf(f.Stderr, "infertop: %s\n", pr)
			lastState, f.lastLine = state, f.now()
		}
	}
	done := make(chan struct{})
	started := f.now()
	go func() {
		defer close(done)
		defer crash.Recover()
		_ = d.Drive(ctx, progress) // the session keeps the result and its error
	}()
	for waiting := true; waiting; {
		select {
		case <-f.Signals:
			cancel(errInterrupted)
		case <-done:
			waiting = false
		}
	}
	f.clear()
	fmt.Fprintf(f.Stderr, "infertop: capacity run over in %s\n", f.now().Sub(started).Round(time.Second))
}

// progress prints line: in place on a terminal, else every ProgressEvery.
func (f *Follower) progress(line string) {
	switch {
	case f.Live:
		fmt.Fprintf(f.Stderr, "\r\033[K%s", line)
	case f.now().Sub(f.lastLine) >= f.ProgressEvery:
		fmt.Fprintln(f.Stderr, line)
		f.lastLine = f.now()
	}
}

// clear clears a terminal's progress line.
func (f *Follower) clear() {
	if f.Live {
		fmt.Fprint(f.Stderr, "\r\033[K")
	}
}

// liveLook is s's live comparison where s compares.
func liveLook(s Session) (Look, bool) {
	if c, ok := s.(Comparing); ok {
		return c.Live()
	}
	return Look{}, false
}

// onSide names side i of n in a reason ("" for one side).
func onSide(n, i int) string {
	if n < 2 {
		return ""
	}
	return " on the " + compare.Side(i).String()
}

func ending(last []load.Snapshot) bool {
	for _, s := range last {
		if s.Ending() {
			return true
		}
	}
	return false
}

func inFlight(last []load.Snapshot) int64 {
	var n int64
	for _, s := range last {
		n += int64(s.InFlight)
	}
	return n
}

// progressLine is a run's progress in a line.
func progressLine(s load.Snapshot) string {
	line := fmt.Sprintf("%s  %d ok %d failed  in flight %d  %.1f req/s  %.0f tok/s  TTFT p50 %s p99 %s  E2E p99 %s",
		load.FormatDuration(s.Elapsed), s.TotalCompleted, s.TotalFailed, s.InFlight, s.ReqPerSec, s.OutTokPerSec,
		load.FormatDuration(s.Latency[load.TTFT].P50), load.FormatDuration(s.Latency[load.TTFT].P99), load.FormatDuration(s.Latency[load.E2E].P99))
	if s.Scheduled > 0 || s.Backlog > 0 { // the open loop's arrivals not sent
		line += fmt.Sprintf("  backlog %d  dropped %d", s.Backlog, s.Dropped)
	}
	if s.Ending() {
		line += "  (ending: draining)"
	}
	return line
}
