package runner

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim/simtest"
)

// TestModelNotListed: a model the server does not list is said at the
// start, a note (the run goes on) or, with Strict, an error; a listed one
// says nothing, and its context (the sim's max_model_len) reaches the
// engine. On main the run started silently and every request was a 404.
func TestModelNotListed(t *testing.T) {
	for _, strict := range []bool{false, true} {
		cfg := simConfig(t)
		cfg.Probe.Model, cfg.Strict = "nope", strict
		var notes strings.Builder
		cfg.Notes = &notes
		r, err := Start(context.Background(), cfg)
		if strict {
			if !errors.Is(err, ErrModelNotListed) || !strings.Contains(err.Error(), cfg.Sim.Model) {
				t.Fatalf("strict: %v, want %v naming %s", err, ErrModelNotListed, cfg.Sim.Model)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		r.Stop()
		if !strings.Contains(notes.String(), `warning: model "nope" is not among the models the server lists (`+cfg.Sim.Model+`)`) {
			t.Fatalf("notes: %q", notes.String())
		}
	}
	cfg := simConfig(t)
	var notes strings.Builder
	cfg.Notes, cfg.Strict = &notes, true
	r, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	if notes.Len() != 0 || r.context != cfg.Sim.MaxModelLen || r.context == 0 {
		t.Fatalf("the sim's own model: notes %q, context %d (want %d)", notes.String(), r.context, cfg.Sim.MaxModelLen)
	}
}

// TestFixedOutputOnNewAPIs: --fixed-output reaches the Responses and
// Messages APIs (ignore_eos, which vLLM's engine takes there too) without
// the warning that it cannot; the APIs with no such field still warn.
func TestFixedOutputOnNewAPIs(t *testing.T) {
	for _, kind := range []probe.Kind{probe.OpenAIResponses, probe.Anthropic} {
		cfg := simConfig(t)
		cfg.API, cfg.Probe.Body.IgnoreEOS, cfg.Load.MaxRequests = kind, true, 4
		s, notes := runToEnd(t, cfg)
		if strings.Contains(notes, "force the output length") || s.Run.Completed != 4 || s.Run.OutTokens != 4*int64(cfg.Load.Knobs.OutputTokens) {
			t.Errorf("%s: %d completed, %d tokens; notes %q", kind, s.Run.Completed, s.Run.OutTokens, notes)
		}
	}
	for _, kind := range []probe.Kind{probe.Ollama, probe.TGI, probe.Generic, probe.OpenAIEmbeddings} {
		if fixesOutput(kind) {
			t.Errorf("%s: said to take ignore_eos", kind)
		}
	}
}

// TestModelLatestTag: a model given without a tag is the one an Ollama
// server lists as NAME:latest (Ollama adds the tag itself): no warning
// (every run against Ollama warned that tiny is not listed), and its
// requests answered; another tag is another model.
func TestModelLatestTag(t *testing.T) {
	cfg := simConfig(t)
	cfg.Sim.Model, cfg.Probe.Model, cfg.Load.MaxRequests = "tiny:latest", "tiny", 3
	s, notes := runToEnd(t, cfg)
	if notes != "" || s.Run.Completed != 3 {
		t.Fatalf("%d of 3 completed; notes %q", s.Run.Completed, notes)
	}
	for _, c := range []struct {
		id, name string
		same     bool
	}{{"tiny:latest", "tiny", true}, {"tiny:latest", "tiny:latest", true}, {"tiny:1b", "tiny", false}, {"tiny:latest", "tiny:1b", false}, {"tiny", "tiny:latest", false}} {
		if got := sameModel(c.id, c.name); got != c.same {
			t.Errorf("sameModel(%q, %q) = %v", c.id, c.name, got)
		}
	}
}

// runToEnd runs cfg (a request limit in it) to its end, and returns its
// last snapshot and its notes.
func runToEnd(t *testing.T, cfg Config) (load.Snapshot, string) {
	t.Helper()
	var notes strings.Builder
	cfg.Notes = &notes
	r, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := waitSnap(t, r, 10*time.Second, "the end", func(s load.Snapshot) bool { return s.Done })
	r.Stop()
	return s, notes.String()
}

// TestAPIOverridesPath: --api given against a URL whose path names
// another API says where requests go (/v1/embeddings with --api
// openai-chat became /v1/chat/completions without a word); a path of
// the API given says nothing.
func TestAPIOverridesPath(t *testing.T) {
	for _, c := range []struct {
		path, note string
	}{{"/v1/embeddings", "--api openai-chat, but the URL's path ends in /embeddings (openai-embeddings): requests go to "}, {"/v1/chat/completions", ""}, {"/v1", ""}} {
		front := simtest.Start(t, simConfig(t).Sim)
		cfg := Config{URL: front.Origin + c.path, API: probe.OpenAIChat, Load: simConfig(t).Load}
		cfg.Load.MaxRequests = 1
		_, notes := runToEnd(t, cfg)
		if c.note == "" && notes != "" || !strings.Contains(notes, c.note) || c.note != "" && !strings.Contains(notes, front.ChatURL) {
			t.Errorf("%s: notes %q", c.path, notes)
		}
	}
}

// TestGPULocalWithoutNvidiaSMI: --gpu local on a machine without
// nvidia-smi says so at the start (a headless run said nothing, and had
// no GPU figure).
func TestGPULocalWithoutNvidiaSMI(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	cfg := simConfig(t)
	cfg.Telemetry.GPULocal, cfg.Load.MaxRequests = true, 1
	if _, notes := runToEnd(t, cfg); !strings.Contains(notes, "--gpu local: nvidia-smi is not on the PATH") {
		t.Fatalf("notes %q", notes)
	}
}

// TestModelListSanitised: the server's model ids are untrusted: the
// warning and the strict error quote them sanitised and cut (issue 40,
// item 13: a pane title changed, OSC 52, a cleared screen).
func TestModelListSanitised(t *testing.T) {
	id := "evil\x1b]0;pwned\x07\x1b[2J" + strings.Repeat("m", 900)
	body, _ := json.Marshal(map[string]any{"data": []map[string]any{{"id": id}}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	defer srv.Close()
	for _, strict := range []bool{false, true} {
		cfg := Config{URL: srv.URL + "/v1", API: probe.OpenAIChat, Telemetry: Telemetry{ServerMetrics: ServerMetricsOff},
			Load: load.Config{Knobs: load.Knobs{Concurrency: 1, PromptTokens: 8, OutputTokens: 4, Paused: true}}}
		cfg.Probe.Model, cfg.Strict = "nope", strict
		var notes strings.Builder
		cfg.Notes = &notes
		r, err := Start(context.Background(), cfg)
		said := notes.String()
		switch {
		case strict && err == nil:
			t.Fatal("strict: no error")
		case strict:
			said = err.Error()
		case err != nil:
			t.Fatal(err)
		default:
			r.Stop()
		}
		if strings.ContainsAny(said, "\x1b\x07") || len(said) > 512 || !strings.Contains(said, `evil\x1b]0;pwned`) {
			t.Fatalf("strict %v: %d bytes, unsanitised or uncut: %q", strict, len(said), said[:min(len(said), 80)])
		}
	}
}
