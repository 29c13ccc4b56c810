package runner

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
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
