package runner

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
	"github.com/infertop/infertop/slo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// simConfig is a small load on the embedded sim's fast preset.
func simConfig(t *testing.T) Config {
	t.Helper()
	p, err := sim.Preset("fast")
	if err != nil {
		t.Fatal(err)
	}
	return Config{Sim: p, Load: load.Config{Knobs: load.Knobs{Concurrency: 2, PromptTokens: 8, OutputTokens: 4}, Tick: 20 * time.Millisecond}}
}

// waitSnap waits for a snapshot of r for which cond holds.
func waitSnap(t *testing.T, r *Runner, within time.Duration, what string, cond func(load.Snapshot) bool) load.Snapshot {
	t.Helper()
	snaps, unsubscribe := r.Subscribe()
	defer unsubscribe()
	deadline := time.After(within)
	for {
		select {
		case s, ok := <-snaps:
			if !ok {
				t.Fatalf("engine stopped before %s", what)
			}
			if cond(s) {
				return s
			}
		case <-deadline:
			t.Fatalf("no %s within %v: %+v", what, within, r.Engine().Latest())
		}
	}
}

func TestStartStop(t *testing.T) {
	cfg := simConfig(t)
	cfg.Load.MaxRequests = 10
	cfg.RequestsLog = t.TempDir() + "/r.jsonl"
	r, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := waitSnap(t, r, 10*time.Second, "the end of the run", func(s load.Snapshot) bool { return s.Done })
	if s.TotalCompleted != 10 || s.DoneWhy != load.EndRequests || !r.Target().Sim || r.Target().API != "openai-chat" {
		t.Fatalf("completed %d, why %q, target %+v", s.TotalCompleted, s.DoneWhy, r.Target())
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(); err != nil { // idempotent
		t.Fatal(err)
	}
	rep := r.Report(context.Background(), s)
	if rep.Manifest.Model != cfg.Sim.Model || rep.Manifest.End.Sub(rep.Manifest.Start) != s.Elapsed {
		t.Fatalf("manifest %+v", rep.Manifest)
	}
}

// TestStopDuringStart: a start cancelled while the model list hangs
// returns at once and leaves nothing running.
func TestStopDuringStart(t *testing.T) {
	hang := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-req.Context().Done():
		case <-hang:
		}
	}))
	defer hs.Close()
	defer close(hang)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	cfg := Config{URL: hs.URL + "/v1", API: probe.OpenAIChat, Load: simConfig(t).Load}
	start := time.Now()
	r, err := Start(ctx, cfg)
	if err == nil {
		r.Stop()
		t.Fatal("a start against a hanging model list succeeded")
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("the start took %v after its context ended", time.Since(start))
	}
}

// TestDeadEndpoint: detection against a closed port is an error; with the
// API and model given the load runs and every request fails as connection.
func TestDeadEndpoint(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	url := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	if r, err := Start(context.Background(), Config{URL: url, Load: simConfig(t).Load}); err == nil {
		r.Stop()
		t.Fatal("detection against a dead endpoint succeeded")
	}
	cfg := Config{URL: url, API: probe.OpenAIChat, Probe: probe.Config{Model: "m"},
		Load: load.Config{Knobs: load.Knobs{Concurrency: 2, PromptTokens: 8, OutputTokens: 4}, Tick: 20 * time.Millisecond, MaxRequests: 6}}
	r, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	s := waitSnap(t, r, 10*time.Second, "the end", func(s load.Snapshot) bool { return s.Done })
	if s.TotalFailed != 6 || s.TotalByClass[probe.Connection] != 6 {
		t.Fatalf("failed %d, connection %d", s.TotalFailed, s.TotalByClass[probe.Connection])
	}
}

// TestExporterJoinsEnergy: an energy objective the run breaks reads as
// breached on the exporter too, as it does in Figures.
func TestExporterJoinsEnergy(t *testing.T) {
	cfg := simConfig(t)
	cfg.Sim.GPUs = 1
	cfg.Telemetry.Every = 100 * time.Millisecond
	cfg.MetricsAddr = "127.0.0.1:0"
	var err error
	if cfg.Objectives, err = slo.ParseAll([]string{"energy_per_token<=0.000001J"}); err != nil {
		t.Fatal(err)
	}
	r, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	waitSnap(t, r, 20*time.Second, "an energy figure", func(s load.Snapshot) bool {
		f := r.Figures(s)
		return f.Scraped && f.Window.HasEnergy && s.TotalCompleted > 0
	})
	want := `infertop_slo_held{slo="energy_per_token<=0.000001J"} 0`
	deadline := time.Now().Add(10 * time.Second)
	var body string
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + r.MetricsAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if body = string(b); strings.Contains(body, want) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the exporter lacks %q:\n%s", want, grep(body, "infertop_slo_held"))
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestSaveReplacesSymlink: a symlink planted where the s key's report goes
// is replaced, never written through.
func TestSaveReplacesSymlink(t *testing.T) {
	cfg := simConfig(t)
	cfg.Load.MaxRequests = 4
	r, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	s := waitSnap(t, r, 10*time.Second, "the end", func(s load.Snapshot) bool { return s.Done })
	dir, victim := t.TempDir(), t.TempDir()+"/victim"
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "infertop-"+r.Started().Format("20060102-150405"))
	if err := os.Symlink(victim, base+".json"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Save(context.Background(), s, dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Fatalf("the save wrote through the symlink: %q", b)
	}
	if fi, err := os.Lstat(base + ".json"); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Fatalf("the report is not a file of its own: %v %v", fi, err)
	}
}

// TestServerInfoOffTheCriticalPath: a hanging /v1/models holds up neither
// the run nor its report past the info timeout (200 ms here, not the
// default 3 s), and the report has no server description.
func TestServerInfoOffTheCriticalPath(t *testing.T) {
	p, _ := sim.Preset("fast")
	backend := simtest.Start(t, p)
	hang := make(chan struct{})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, "/models") {
			select {
			case <-req.Context().Done():
			case <-hang:
			}
			return
		}
		resp, err := http.Post(backend.URL+strings.TrimPrefix(req.URL.Path, "/v1"), "application/json", req.Body)
		if err != nil {
			w.WriteHeader(502)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	defer front.Close()
	defer close(hang)
	const infoTimeout = 200 * time.Millisecond
	start := time.Now()
	r, err := Start(context.Background(), Config{URL: front.URL + "/v1", API: probe.OpenAIChat, Probe: probe.Config{Model: p.Model, NoStream: true},
		Telemetry: Telemetry{ServerMetrics: ServerMetricsOff}, InfoTimeout: infoTimeout,
		Load: load.Config{Knobs: load.Knobs{Concurrency: 2, PromptTokens: 8, OutputTokens: 4}, Tick: 20 * time.Millisecond, MaxRequests: 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	s := waitSnap(t, r, 10*time.Second, "the end", func(s load.Snapshot) bool { return s.Done })
	if s.TotalCompleted != 4 {
		t.Fatalf("completed %d: %s", s.TotalCompleted, s.LastError)
	}
	rep := r.Report(context.Background(), s)
	if took := time.Since(start); took > infoTimeout+2*time.Second {
		t.Fatalf("a run of 4 requests and its report took %v against a hanging /v1/models", took)
	}
	if len(rep.Manifest.Server) != 0 {
		t.Fatalf("a server description from a hanging /v1/models: %v", rep.Manifest.Server)
	}
}
