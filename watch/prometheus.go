package watch

import (
	"context"
	"sort"

	"github.com/infertop/infertop/engines"
	"github.com/infertop/infertop/promsource"
)

// Prometheus is the Source that reads a fleet a Prometheus already
// scrapes: one query for every engine's series of the matched servers,
// each server's series rebuilt into the families a direct scrape gives,
// so that its increments, restarts and buckets are the same as a
// Scrape's of the same servers (a read is as new as the last scrape).
type Prometheus struct {
	src *promsource.Source
}

// NewPrometheus is the Source of cfg; cfg.Names defaults to every
// engine's families.
func NewPrometheus(cfg promsource.Config) (*Prometheus, error) {
	if len(cfg.Names) == 0 {
		cfg.Names = engines.Names()
	}
	src, err := promsource.New(cfg)
	if err != nil {
		return nil, err
	}
	return &Prometheus{src: src}, nil
}

// String names the source, the URL's secrets left out.
func (p *Prometheus) String() string { return "Prometheus " + p.src.String() + " " + p.src.Query() }

// Read asks the Prometheus for every server's series now.
func (p *Prometheus) Read(ctx context.Context) ([]Observation, error) {
	servers, err := p.src.Get(ctx)
	names := make([]string, 0, len(servers))
	for n := range servers {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]Observation, 0, len(names))
	for _, n := range names {
		sv := servers[n]
		r, rerr := engines.FromFamilies(sv.Families)
		out = append(out, Observation{Target: Target{Name: n, URL: "prometheus/" + n, Group: sv.Group}, Reading: r, Err: rerr})
	}
	if err != nil && len(out) == 0 {
		return nil, err
	}
	return out, err
}
