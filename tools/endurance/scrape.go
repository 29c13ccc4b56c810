package endurance

import (
	"context"
	"fmt"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scraper reads the dashboard's own exporter.
type scraper struct {
	url    string
	client *http.Client
}

func (m *scraper) waitUp(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		if _, err := m.sample(); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("endurance: the dashboard's exporter never answered: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (m *scraper) sample() (Sample, error) {
	resp, err := m.client.Get(m.url)
	if err != nil {
		return Sample{}, fmt.Errorf("endurance: scrape: %w", err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return Sample{}, fmt.Errorf("endurance: scrape: %w", err)
	}
	one := func(name string) float64 {
		f := fams[name]
		if f == nil || len(f.Metric) == 0 {
			return 0
		}
		return value(f.Metric[0])
	}
	s := Sample{
		RSS:        int64(one("process_resident_memory_bytes")),
		Heap:       int64(one("go_memstats_heap_inuse_bytes")),
		Goroutines: int(one("go_goroutines")),
		InFlight:   int(one("infertop_in_flight_requests")),
		OpenFDs:    int(one("process_open_fds")),
		CPU:        one("process_cpu_seconds_total"),
		Classes:    map[string]float64{},
	}
	if f := fams["infertop_requests_total"]; f != nil {
		for _, mt := range f.Metric {
			for _, l := range mt.Label {
				if l.GetName() == "class" {
					s.Classes[l.GetValue()] = value(mt)
				}
			}
		}
	}
	if _, ok := fams["go_goroutines"]; !ok {
		return s, fmt.Errorf("endurance: scrape: no go_goroutines in %s", m.url)
	}
	return s, nil
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}
