// Package endurance runs infertop's dashboard, as a person would (in a
// tmux terminal), for a long time against a sim that injects every kind of
// fault, and samples the dashboard process throughout through its own
// Prometheus exporter: resident memory, heap, goroutines and the requests
// by class. It presses keys meanwhile and times how soon the screen shows
// them, and it pauses the load twice (early and at the end) to count the
// goroutines left with nothing in flight.
//
// The bench runs it for an hour (go run ./tools/bench -only endurance); a
// 30-second version runs in the tests. Everything listens on 127.0.0.1.
package endurance

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/infertop/infertop/tools/tmuxterm"
)

// Config says what to run and for how long.
type Config struct {
	// Infertop is the command that runs infertop: a binary and any leading
	// arguments; Env is added to the environment of both processes.
	Infertop []string
	Env      []string
	Duration time.Duration
	// Faults is the sim's --faults; SimArgs and LoadArgs are further flags
	// for `infertop sim` and for the dashboard.
	Faults             string
	SimArgs, LoadArgs  []string
	Every              time.Duration // between samples; 1s when zero
	Width, Height      int           // the terminal; 120x40 when zero
	Log                io.Writer     // a line per stage and a sample now and then; nil for none
	KeyEvery           time.Duration // between key presses (K and J in turn); 10s when zero
	IdleSettle         time.Duration // wait after the load drains before counting goroutines; 2s when zero
	DrainTimeout       time.Duration // longest wait for the in-flight requests to finish when paused; 30s when zero
	StallLimit         time.Duration // the longest without a reading before the dashboard counts as stuck; 30s when zero
	Socket             string        // tmux's -L socket; one per process when empty
	KeepScreenOnFailed bool          // leave tmux running when Run fails (for a person to look)
	// Measure only: no pauses to count what is left and no key presses,
	// for a plain reading of the dashboard's cost.
	Measure bool
	// Headless runs `infertop run` with the same flags in the same
	// terminal instead of the dashboard (Measure only), read the same
	// way: the dashboard's own cost is the difference.
	Headless bool
}

// Sample is one reading of the dashboard process.
type Sample struct {
	At         time.Duration // since the load started
	RSS        int64         // resident memory, bytes
	Heap       int64         // Go heap in use, bytes
	Goroutines int
	InFlight   int
	OpenFDs    int                // files and sockets: each connection to the sim is one
	CPU        float64            // the process's CPU seconds, user and system, since it started
	Classes    map[string]float64 // requests finished by class, since the start
}

// Result is what a run saw.
type Result struct {
	Samples []Sample
	// IdleEarly and IdleEnd are the goroutines with the load paused and
	// drained, after the first tenth of the run and at its end.
	IdleEarly, IdleEnd       int
	IdleFDsEarly, IdleFDsEnd int // open files and sockets at the same two points
	// KeyLatency is, per key press (K and J in turn, ending where it began),
	// the time from sending it to the screen showing the new concurrency.
	KeyLatency []time.Duration
	Screen     string // the last screen
	Exit       string // what the dashboard printed as it quit
	Missed     int    // readings that failed (the exporter busy past 5 s), none more than StallLimit in a row
}

var simAddr = regexp.MustCompile(`at http://([0-9.:]+)/v1`)

// Run starts the sim and the dashboard, samples for cfg.Duration, quits
// the dashboard with q and returns what it saw. An error means the run
// could not be made or the dashboard stopped answering; whether what it
// saw holds is Result.Check's.
func Run(ctx context.Context, cfg Config) (_ *Result, err error) {
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	if cfg.Width == 0 {
		cfg.Width, cfg.Height = 120, 40
	}
	if cfg.KeyEvery <= 0 {
		cfg.KeyEvery = 10 * time.Second
	}
	if cfg.IdleSettle <= 0 {
		cfg.IdleSettle = 2 * time.Second
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 30 * time.Second
	}
	if cfg.StallLimit <= 0 {
		cfg.StallLimit = 30 * time.Second
	}
	if cfg.Socket == "" {
		cfg.Socket = fmt.Sprintf("infertop-endurance-%d", time.Now().UnixNano())
	}
	if err := tmuxterm.Installed(); err != nil {
		return nil, fmt.Errorf("endurance: to run the dashboard: %w", err)
	}

	simURL, stopSim, err := startSim(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer stopSim()
	metricsAddr, err := freePort()
	if err != nil {
		return nil, err
	}
	var mode []string
	if cfg.Headless {
		if !cfg.Measure {
			return nil, errors.New("endurance: a headless run is for Measure only")
		}
		mode = []string{"run", "--duration", "1h"}
	}
	cmd := shellQuote(append(append([]string{"env"}, cfg.Env...), cfg.Infertop...)) + " " + shellQuote(append(append(mode,
		"--url", simURL, "--metrics-addr", metricsAddr, "--scrape-every", "1s"), cfg.LoadArgs...)) +
		"; echo EXITED $?; sleep 3600"
	t, err := tmuxterm.Start(cfg.Socket, cfg.Width, cfg.Height, cmd)
	if err != nil {
		return nil, fmt.Errorf("endurance: %w", err)
	}
	defer func() {
		if err == nil || !cfg.KeepScreenOnFailed {
			t.Kill()
		}
	}()
	m := &scraper{url: "http://" + metricsAddr + "/metrics", client: &http.Client{Timeout: 5 * time.Second}}
	defer m.client.CloseIdleConnections()
	logf := func(format string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", a...)
		}
	}
	if err = m.waitUp(ctx, 30*time.Second); err != nil {
		err = fmt.Errorf("%w; the screen:\n%s", err, screen(t))
		return nil, err
	}
	logf("endurance: dashboard up, exporter at %s, sim at %s", metricsAddr, simURL)

	res := &Result{}
	start := time.Now()
	sample := func() (Sample, error) {
		s, err := m.sample()
		s.At = time.Since(start)
		return s, err
	}
	idle := func() (Sample, error) {
		if err := t.Keys("Space"); err != nil {
			return Sample{}, fmt.Errorf("endurance: %w", err)
		}
		deadline := time.Now().Add(cfg.DrainTimeout)
		for {
			s, err := sample()
			if err == nil && s.InFlight == 0 {
				break
			}
			if time.Now().After(deadline) {
				if err != nil {
					return Sample{}, err
				}
				return Sample{}, fmt.Errorf("endurance: %d requests still in flight %v after pausing", s.InFlight, cfg.DrainTimeout)
			}
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(cfg.IdleSettle)
		s, err := sample()
		for tries := 1; err != nil && tries < 3; tries++ {
			s, err = sample()
		}
		if err != nil {
			return Sample{}, err
		}
		if err := t.Keys("Space"); err != nil {
			return Sample{}, fmt.Errorf("endurance: %w", err)
		}
		return s, nil
	}

	next := time.NewTicker(cfg.Every)
	defer next.Stop()
	lastKey, up, lastSample := time.Now(), false, time.Now()
	early := cfg.Duration / 10
	for time.Since(start) < cfg.Duration {
		select {
		case <-ctx.Done():
			err = ctx.Err()
			return nil, err
		case <-next.C:
		}
		s, serr := sample()
		if serr != nil {
			// One missed reading is the machine being busy; the
			// dashboard has stopped answering only after StallLimit.
			res.Missed++
			if time.Since(lastSample) > cfg.StallLimit {
				err = fmt.Errorf("%w (no reading for %v) at %v; the screen:\n%s", serr, time.Since(lastSample).Round(time.Second),
					time.Since(start).Round(time.Second), screen(t))
				return nil, err
			}
			continue
		}
		lastSample = time.Now()
		res.Samples = append(res.Samples, s)
		if len(res.Samples)%60 == 0 {
			logf("endurance: %v rss %d MiB heap %d MiB goroutines %d requests %v", s.At.Round(time.Second), s.RSS>>20, s.Heap>>20, s.Goroutines, s.Classes)
		}
		if !cfg.Measure && res.IdleEarly == 0 && s.At >= early {
			var s Sample
			if s, err = idle(); err != nil {
				return nil, err
			}
			res.IdleEarly, res.IdleFDsEarly = s.Goroutines, s.OpenFDs
			logf("endurance: %d goroutines paused and drained at %v", res.IdleEarly, s.At.Round(time.Second))
		}
		if !cfg.Measure && time.Since(lastKey) >= cfg.KeyEvery {
			key := "K"
			if up {
				key = "J"
			}
			var d time.Duration
			if d, err = pressAndWatch(t, key); err != nil {
				return nil, err
			}
			res.KeyLatency = append(res.KeyLatency, d)
			lastKey, up = time.Now(), !up
		}
	}
	if up { // back to the starting concurrency, so the idle connections compare
		var d time.Duration
		if d, err = pressAndWatch(t, "J"); err != nil {
			return nil, err
		}
		res.KeyLatency = append(res.KeyLatency, d)
	}
	if !cfg.Measure {
		var s Sample
		if s, err = idle(); err != nil {
			return nil, err
		}
		res.IdleEnd, res.IdleFDsEnd = s.Goroutines, s.OpenFDs
	}
	logf("endurance: %d goroutines paused and drained at the end", res.IdleEnd)
	res.Screen = screen(t)
	quit := "q"
	if cfg.Headless {
		quit = "C-c" // the first signal drains, and the run ends
	}
	if err = t.Keys(quit); err != nil {
		err = fmt.Errorf("endurance: %w", err)
		return nil, err
	}
	var scr string
	scr, err = t.Wait(30*time.Second, 50*time.Millisecond, t.Screen, func(s string) bool { return strings.Contains(s, "EXITED") })
	if err != nil {
		err = fmt.Errorf("endurance: the dashboard did not quit after q: %w:\n%s", err, scr)
		return nil, err
	}
	res.Exit = strings.TrimSpace(scr[strings.Index(scr, "EXITED"):])
	if j := strings.IndexByte(res.Exit, '\n'); j >= 0 {
		res.Exit = res.Exit[:j]
	}
	return res, nil
}

// startSim runs `infertop sim` on a free port and returns its /v1 URL.
func startSim(ctx context.Context, cfg Config) (string, func(), error) {
	args := append(append([]string{}, cfg.Infertop[1:]...), "sim", "--addr", "127.0.0.1:0")
	if cfg.Faults != "" {
		args = append(args, "--faults", cfg.Faults)
	}
	cmd := exec.Command(cfg.Infertop[0], append(args, cfg.SimArgs...)...)
	cmd.Env = append(cmd.Environ(), cfg.Env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, fmt.Errorf("endurance: sim: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("endurance: sim: %w", err)
	}
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	lines := bufio.NewScanner(stderr)
	found := make(chan string, 1)
	go func() { // owned by the sim process: ends when its stderr closes
		sent := false
		for lines.Scan() {
			if m := simAddr.FindStringSubmatch(lines.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		if !sent {
			close(found)
		}
	}()
	select {
	case addr, ok := <-found:
		if !ok {
			stop()
			return "", nil, errors.New("endurance: the sim exited without serving")
		}
		return "http://" + addr + "/v1", stop, nil
	case <-time.After(30 * time.Second):
		stop()
		return "", nil, errors.New("endurance: the sim did not start within 30s")
	case <-ctx.Done():
		stop()
		return "", nil, ctx.Err()
	}
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("endurance: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// shellQuote quotes each word for sh.
func shellQuote(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
