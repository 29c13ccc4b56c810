package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Adapter is a LoRA adapter served under the endpoint beside the base
// model (Params.Model), asked for by its name as a model is. Its
// sequences share the base model's batch, slots and KV budget, as vLLM
// serves adapters, and each makes a token every Slowdown steps of that
// batch (the adapter's extra matrix products), so at light load its
// TTFT and TPOT are about Slowdown times the base model's.
type Adapter struct {
	Name string
	// Slowdown is within [1, MaxSlowdown]: 1 is as fast as the base.
	Slowdown float64
}

// MaxAdapters bounds Params.Adapters: /v1/models lists every one.
const MaxAdapters = 64

// ParseAdapters reads NAME[:SLOWDOWN] separated by commas, e.g.
// "sql-lora,chat-lora:1.5" (a slowdown of 1 where none is given). "" is
// none. Its errors speak of an adapter list, not of a flag.
func ParseAdapters(s string) ([]Adapter, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []Adapter
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		a := Adapter{Name: part, Slowdown: 1}
		if i := strings.LastIndexByte(part, ':'); i >= 0 {
			k, err := strconv.ParseFloat(strings.TrimSpace(part[i+1:]), 64)
			if err != nil {
				return nil, fmt.Errorf("bad adapter list %q: %q is not NAME[:SLOWDOWN], e.g. sql-lora:1.5", s, part)
			}
			a = Adapter{Name: strings.TrimSpace(part[:i]), Slowdown: k}
		}
		out = append(out, a)
	}
	return out, nil
}

// AdaptersString is adapters as ParseAdapters reads them back.
func AdaptersString(adapters []Adapter) string {
	parts := make([]string, len(adapters))
	for i, a := range adapters {
		parts[i] = a.Name + ":" + strconv.FormatFloat(a.Slowdown, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

// checkAdapters reports the first adapter the sim cannot serve.
func (p Params) checkAdapters() error {
	if len(p.Adapters) > MaxAdapters {
		return fmt.Errorf("%d adapters, past the most, %d", len(p.Adapters), MaxAdapters)
	}
	seen := map[string]bool{p.Model: true}
	for _, a := range p.Adapters {
		switch {
		case a.Name == "":
			return fmt.Errorf("an adapter's name is empty")
		case seen[a.Name]:
			return fmt.Errorf("%q is named twice (the base model's name included)", a.Name)
		case !(a.Slowdown >= 1 && a.Slowdown <= MaxSlowdown) || math.IsNaN(a.Slowdown):
			return fmt.Errorf("%q: the slowdown must be within 1..%d (the base model is the fastest), got %g", a.Name, MaxSlowdown, a.Slowdown)
		}
		seen[a.Name] = true
	}
	return nil
}

// served is the name a request's model is served under and its adapter's
// slowdown (1 for the base); ok is false when the sim serves no such
// model.
func (p *Params) served(model string) (name string, slowdown float64, ok bool) {
	if model == p.Model || model+":latest" == p.Model { // Ollama adds :latest itself
		return p.Model, 1, true
	}
	for _, a := range p.Adapters {
		if model == a.Name {
			return a.Name, a.Slowdown, true
		}
	}
	return "", 0, false
}
