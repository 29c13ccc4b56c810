package runner

import (
	"context"
	"errors"
	"strings"
	"testing"
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
