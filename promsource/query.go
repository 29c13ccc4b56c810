package promsource

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/infertop/infertop/readlimit"
	"github.com/infertop/infertop/sanitize"
)

// maxLabels bounds the labels of one series: a series of more is
// refused before its labels are decoded.
const maxLabels = 128

// maxLabelBytes bounds a label's name and value: a series past it is
// left out, the others read. One series of a 30 MB instance label held
// a watch at 501 MB (the value is a server's name, a map's key, a
// target's). A real one is a model's path or a pod's name.
const maxLabelBytes = 4 << 10

// errLongLabel is a series with a label past maxLabelBytes.
var errLongLabel = fmt.Errorf("a label past %d KB", maxLabelBytes>>10)

// Server is what Prometheus holds of one server now: its group (the By
// label's value, "" where its series lack it) and its metric families,
// as a direct scrape in the text format names them (no help text, no
// label of an empty value: Prometheus keeps neither). A
// family is a counter by its _total or Prometheus' metadata, a gauge by
// the metadata, else untyped: read a plain value whatever its field.
// Every name and value is Prometheus': sanitise before showing.
type Server struct {
	Group    string
	Families map[string]*dto.MetricFamily
}

// sample is one series of a vector result.
type sample struct {
	Metric    json.RawMessage   `json:"metric"`
	Value     []json.RawMessage `json:"value"`
	Histogram json.RawMessage   `json:"histogram"`
}

// Get asks for the current value of every wanted series of the matched
// servers and returns them per server (the Instance label's value). The
// labels that name the target (the instance label, instance, job and
// the By label) are taken off the series, so the families are those of
// a direct scrape. What could not be used (native histograms, series
// without the instance label, a server of two groups) is said in the
// error returned beside the servers.
func (s *Source) Get(ctx context.Context) (map[string]Server, error) {
	b := newBuild(s)
	err := s.call(ctx, http.MethodPost, "/api/v1/query", url.Values{"query": {s.query}}, func(dec *json.Decoder) error {
		return object(dec, func(key string) error {
			switch key {
			case "resultType":
				var rt string
				if err := dec.Decode(&rt); err != nil {
					return err
				}
				if rt != "vector" {
					return fmt.Errorf("a result of type %q, not a vector", rt)
				}
				return nil
			case "result":
				if err := delim(dec, '['); err != nil {
					return err
				}
				for dec.More() {
					if b.series++; b.series > s.maxSeries {
						return errTooMany
					}
					var smp sample
					if err := dec.Decode(&smp); err != nil {
						return err
					}
					if err := b.add(&smp); err != nil {
						return err
					}
				}
				return delim(dec, ']')
			}
			return skip(dec)
		})
	})
	if err != nil {
		return nil, err
	}
	s.lookupTypes(ctx, b.untyped)
	return b.finish(), errors.Join(b.notes()...)
}

// build turns samples into each server's families.
type build struct {
	s       *Source
	servers map[string]*Server
	metrics map[string]*dto.Metric // by server, family and labels
	untyped map[string]bool        // plain families whose type metadata tells
	series  int
	// what was left out, for the notes
	native, noInstance int
	twoGroups          []string
	// perGroup counts each group's servers; pastServers the series of
	// servers past MaxServers, left out.
	perGroup    map[string]int
	pastServers int
	// longLabel counts the series left out for a label past
	// maxLabelBytes.
	longLabel int
}

func newBuild(s *Source) *build {
	return &build{s: s, servers: map[string]*Server{}, metrics: map[string]*dto.Metric{}, untyped: map[string]bool{}, perGroup: map[string]int{}}
}

// role is what a series is to its family.
type role int

const (
	plain role = iota
	bucket
	sum
	count
	quantile
)

// classify says which wanted family a series belongs to, and as what;
// ok is false for a series of no wanted family.
func (s *Source) classify(name string, labels map[string]string) (family string, r role, ok bool) {
	_, hasLE := labels["le"]
	_, hasQ := labels["quantile"]
	switch {
	case s.names[name] && !hasQ:
		return name, plain, true
	case s.names[name] && hasQ:
		return name, quantile, true
	case strings.HasSuffix(name, "_bucket") && hasLE && s.names[strings.TrimSuffix(name, "_bucket")]:
		return strings.TrimSuffix(name, "_bucket"), bucket, true
	case strings.HasSuffix(name, "_sum") && s.names[strings.TrimSuffix(name, "_sum")]:
		return strings.TrimSuffix(name, "_sum"), sum, true
	case strings.HasSuffix(name, "_count") && s.names[strings.TrimSuffix(name, "_count")]:
		return strings.TrimSuffix(name, "_count"), count, true
	case strings.HasSuffix(name, "_total") && s.names[strings.TrimSuffix(name, "_total")]:
		// A counter named without its _total: the text format's family
		// name has it, as a direct scrape gives it.
		return name, plain, true
	}
	return "", plain, false
}

// add takes one sample.
func (b *build) add(smp *sample) error {
	if len(smp.Histogram) > 0 {
		b.native++
		return nil
	}
	labels, err := flatStrings(smp.Metric, maxLabels)
	if errors.Is(err, errLongLabel) {
		b.longLabel++
		return nil
	}
	if err != nil {
		return fmt.Errorf("a series' labels: %w", err)
	}
	if len(smp.Value) != 2 {
		return errors.New("a sample without its [time, value]")
	}
	vs, _, err := jsonString(bytes.TrimSpace(smp.Value[1]))
	if err != nil {
		return fmt.Errorf("a sample's value: %w", err)
	}
	v, perr := strconv.ParseFloat(vs, 64)
	if perr != nil {
		return fmt.Errorf("a sample's value %.40q", vs)
	}
	name := labels["__name__"]
	family, r, ok := b.s.classify(name, labels)
	if !ok {
		return nil // asked for, yet not wanted: a server that ignores the matcher
	}
	inst := labels[b.s.inst]
	if inst == "" {
		b.noInstance++
		return nil
	}
	srv := b.servers[inst]
	if srv == nil {
		g := labels[b.s.by]
		// A server past the bounds is left out whole: each group keeps
		// up to half of them, whatever another group's count.
		if len(b.servers) >= MaxServers || b.perGroup[g] >= MaxServers/2 {
			b.pastServers++
			return nil
		}
		b.perGroup[g]++
		srv = &Server{Group: g, Families: map[string]*dto.MetricFamily{}}
		b.servers[inst] = srv
	} else if g := labels[b.s.by]; g != srv.Group && len(b.twoGroups) < 3 && !slices.Contains(b.twoGroups, inst) {
		b.twoGroups = append(b.twoGroups, inst)
	}
	pairs := b.pairs(labels)
	key := inst + "\xff" + family + "\xff" + labelKey(pairs)
	m := b.metrics[key]
	if m == nil {
		m = &dto.Metric{Label: pairs}
		b.metrics[key] = m
		mf := srv.Families[family]
		if mf == nil {
			mf = &dto.MetricFamily{Name: ptr(family), Type: dto.MetricType_UNTYPED.Enum()}
			srv.Families[family] = mf
		}
		mf.Metric = append(mf.Metric, m)
	}
	mf := srv.Families[family]
	switch r {
	case plain:
		m.Untyped = &dto.Untyped{Value: ptr(v)}
		if strings.HasSuffix(family, "_total") {
			mf.Type = dto.MetricType_COUNTER.Enum()
		} else {
			b.untyped[family] = true
		}
	case bucket, sum, count:
		if mf.GetType() != dto.MetricType_SUMMARY {
			mf.Type = dto.MetricType_HISTOGRAM.Enum()
		}
		if m.Histogram == nil {
			m.Histogram = &dto.Histogram{}
		}
		h := m.Histogram
		switch r {
		case bucket:
			le, err := strconv.ParseFloat(labels["le"], 64)
			if err != nil {
				return fmt.Errorf("a bucket's le %.40q", labels["le"])
			}
			h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: ptr(le), CumulativeCount: ptr(whole(v))})
		case sum:
			h.SampleSum = ptr(v)
		case count:
			h.SampleCount = ptr(whole(v))
		}
	case quantile:
		mf.Type = dto.MetricType_SUMMARY.Enum()
		q, err := strconv.ParseFloat(labels["quantile"], 64)
		if err != nil {
			return fmt.Errorf("a quantile %.40q", labels["quantile"])
		}
		if m.Summary == nil {
			m.Summary = &dto.Summary{}
		}
		m.Summary.Quantile = append(m.Summary.Quantile, &dto.Quantile{Quantile: ptr(q), Value: ptr(v)})
	}
	return nil
}

// pairs are a series' labels as a direct scrape has them: sorted,
// without the name, the bucket's or quantile's bound, or the labels
// that name the target.
func (b *build) pairs(labels map[string]string) []*dto.LabelPair {
	var out []*dto.LabelPair
	for k, v := range labels {
		switch k {
		case "__name__", "le", "quantile", "instance", "job", b.s.inst, b.s.by:
			continue
		}
		out = append(out, &dto.LabelPair{Name: ptr(k), Value: ptr(v)})
	}
	slices.SortFunc(out, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out
}

// labelKey is a series' identity within its family.
func labelKey(pairs []*dto.LabelPair) string {
	var sb strings.Builder
	for _, p := range pairs {
		sb.WriteString(p.GetName())
		sb.WriteByte(0)
		sb.WriteString(p.GetValue())
		sb.WriteByte(0)
	}
	return sb.String()
}

// finish sorts the buckets, fills a histogram's count from its +Inf
// bucket where _count is absent, makes the summaries, and types the plain
// families by what metadata said.
func (b *build) finish() map[string]Server {
	out := make(map[string]Server, len(b.servers))
	for inst, srv := range b.servers {
		for name, mf := range srv.Families {
			for _, m := range mf.Metric {
				switch {
				case mf.GetType() == dto.MetricType_SUMMARY:
					// Its _sum and _count came as a histogram's.
					if m.Summary == nil {
						m.Summary = &dto.Summary{}
					}
					if m.Histogram != nil {
						m.Summary.SampleCount, m.Summary.SampleSum, m.Histogram = m.Histogram.SampleCount, m.Histogram.SampleSum, nil
					}
					slices.SortFunc(m.Summary.Quantile, func(a, b *dto.Quantile) int { return cmp.Compare(a.GetQuantile(), b.GetQuantile()) })
				case m.Histogram != nil:
					h := m.Histogram
					slices.SortFunc(h.Bucket, func(a, b *dto.Bucket) int { return cmp.Compare(a.GetUpperBound(), b.GetUpperBound()) })
					if h.SampleCount == nil && len(h.Bucket) > 0 && math.IsInf(h.Bucket[len(h.Bucket)-1].GetUpperBound(), 1) {
						h.SampleCount = ptr(h.Bucket[len(h.Bucket)-1].GetCumulativeCount())
					}
				case m.Untyped != nil && mf.GetType() != dto.MetricType_UNTYPED:
					m.Counter = &dto.Counter{Value: m.Untyped.Value}
					m.Untyped = nil
				case m.Untyped != nil:
					switch b.s.types[name] {
					case "counter":
						mf.Type = dto.MetricType_COUNTER.Enum()
						m.Counter, m.Untyped = &dto.Counter{Value: m.Untyped.Value}, nil
					case "gauge":
						mf.Type = dto.MetricType_GAUGE.Enum()
						m.Gauge, m.Untyped = &dto.Gauge{Value: m.Untyped.Value}, nil
					}
				}
			}
			slices.SortFunc(mf.Metric, func(a, b *dto.Metric) int { return strings.Compare(labelKey(a.Label), labelKey(b.Label)) })
		}
		out[inst] = *srv
	}
	return out
}

// notes say what was left out of the answer, one line each.
func (b *build) notes() []error {
	var out []error
	if b.native > 0 {
		out = append(out, fmt.Errorf("promsource: %d native histogram series left out: scrape the classic buckets too (Prometheus' always_scrape_classic_histograms)", b.native))
	}
	if b.pastServers > 0 {
		out = append(out, fmt.Errorf("promsource: %d series of servers past %d (%d a group) left out: narrow --match", b.pastServers, MaxServers, MaxServers/2))
	}
	if b.longLabel > 0 {
		out = append(out, fmt.Errorf("promsource: %d series with %s left out", b.longLabel, errLongLabel))
	}
	if b.noInstance > 0 {
		out = append(out, fmt.Errorf("promsource: %d series without the label %q left out", b.noInstance, b.s.inst))
	}
	if len(b.twoGroups) > 0 {
		var names []string
		for _, n := range b.twoGroups {
			names = append(names, sanitize.Short(n, 60))
		}
		out = append(out, fmt.Errorf("promsource: series of two values of %q for one server (%s): the first kept", b.s.by, strings.Join(names, ", ")))
	}
	return out
}

// lookupTypes asks the metadata API the type of each plain family not
// named _total whose type is not known yet, once for the Source's life:
// a counter such as TGI's tgi_request_count says it only there.
// Prometheus without metadata (or an error) leaves the family untyped.
func (s *Source) lookupTypes(ctx context.Context, names map[string]bool) {
	for name := range names {
		if _, known := s.types[name]; known {
			continue
		}
		s.types[name] = ""
		var meta map[string][]struct {
			Type string `json:"type"`
		}
		err := s.call(ctx, http.MethodGet, "/api/v1/metadata", url.Values{"metric": {name}, "limit": {"1"}}, func(dec *json.Decoder) error {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return err
			}
			if readlimit.JSONValues(raw, 1000) > 1000 {
				return errTooMany
			}
			return json.Unmarshal(raw, &meta)
		})
		if err == nil && len(meta[name]) > 0 {
			s.types[name] = meta[name][0].Type
		}
	}
}

// whole is a count as the text format's parser makes it of a float.
func whole(v float64) uint64 {
	if v < 0 || math.IsNaN(v) {
		return 0
	}
	return uint64(v)
}

func ptr[T any](v T) *T { return &v }

// flatStrings reads a JSON object of strings ({"__name__":"a","le":"1"},
// what a series' labels are) into a map of at most max entries, without
// the generic decoder's reflection: most of an answer's cost.
func flatStrings(b []byte, max int) (map[string]string, error) {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '{' {
		return nil, errors.New("not an object")
	}
	out := make(map[string]string, 8)
	b = bytes.TrimSpace(b[1:])
	if len(b) > 0 && b[0] == '}' {
		return out, nil
	}
	for {
		k, rest, err := jsonString(b)
		if err != nil {
			return nil, err
		}
		rest = bytes.TrimSpace(rest)
		if len(rest) == 0 || rest[0] != ':' {
			return nil, errors.New("no colon after a key")
		}
		v, rest, err := jsonString(bytes.TrimSpace(rest[1:]))
		if err != nil {
			return nil, err
		}
		if len(out) >= max {
			return nil, fmt.Errorf("more than %d labels", max)
		}
		if len(k) > maxLabelBytes || len(v) > maxLabelBytes {
			return nil, errLongLabel
		}
		out[k] = v
		rest = bytes.TrimSpace(rest)
		switch {
		case len(rest) > 0 && rest[0] == ',':
			b = bytes.TrimSpace(rest[1:])
		case len(rest) > 0 && rest[0] == '}' && len(bytes.TrimSpace(rest[1:])) == 0:
			return out, nil
		default:
			return nil, errors.New("not an object of strings")
		}
	}
}

// jsonString reads the JSON string at the start of b, returning it and
// what follows; one without escapes is taken as it is.
func jsonString(b []byte) (string, []byte, error) {
	if len(b) == 0 || b[0] != '"' {
		return "", nil, errors.New("not a string")
	}
	escaped := false
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			if !escaped {
				return string(b[1:i]), b[i+1:], nil
			}
			var s string
			if err := json.Unmarshal(b[:i+1], &s); err != nil {
				return "", nil, err
			}
			return s, b[i+1:], nil
		}
	}
	return "", nil, errors.New("an unterminated string")
}
