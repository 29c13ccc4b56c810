package promsource

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// extra are families the recorded expositions lack: a counter without
// _total (TGI's) and a summary.
const extra = `# TYPE tgi_request_count counter
tgi_request_count 42
# TYPE rpc_seconds summary
rpc_seconds{quantile="0.5"} 0.2
rpc_seconds{quantile="0.99"} 1.5
rpc_seconds_sum 30
rpc_seconds_count 100
`

// parse is an exposition as a direct scrape gives it, labels and series
// in order, without help texts and labels of empty value (neither is in
// Prometheus' answer).
func parse(t testing.TB, text string) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range fams {
		for _, m := range mf.Metric {
			// Prometheus stores no label of an empty value (vLLM's
			// lora_requests_info has some).
			m.Label = slices.DeleteFunc(m.Label, func(p *dto.LabelPair) bool { return p.GetValue() == "" })
			slices.SortFunc(m.Label, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
		}
		slices.SortFunc(mf.Metric, func(a, b *dto.Metric) int { return strings.Compare(labelKey(a.Label), labelKey(b.Label)) })
		mf.Help = nil // an instant query gives no help text
	}
	return fams
}

// prom is a Prometheus API over servers' families: each server's series
// under its instance, job and version labels, as Prometheus stores a
// scrape; metadata from the families' types (none when noMeta).
type prom struct {
	mu      sync.Mutex
	sent    int  // the series answered, over all queries
	keep    bool // answer every query with the first answer's bytes
	kept    []byte
	keptN   int
	servers map[string]map[string]*dto.MetricFamily // by instance
	groups  map[string]string
	noMeta  bool
	queries []string
	auth    []string
	hook    func(w http.ResponseWriter, r *http.Request) bool
}

type series struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (p *prom) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.auth = append(p.auth, r.Header.Get("Authorization"))
	if p.hook != nil && p.hook(w, r) {
		return
	}
	_ = r.ParseForm()
	switch r.URL.Path {
	case "/prefix/api/v1/query":
		p.queries = append(p.queries, r.Form.Get("query"))
		if p.kept != nil {
			p.sent += p.keptN
			_, _ = w.Write(p.kept)
			return
		}
		var out []series
		for inst, fams := range p.servers {
			for _, mf := range fams {
				out = append(out, vector(mf, map[string]string{"instance": inst, "job": "vllm", "version": p.groups[inst]})...)
			}
		}
		p.sent += len(out)
		b, _ := json.Marshal(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": out}})
		if p.keep {
			p.kept, p.keptN = b, len(out)
		}
		_, _ = w.Write(b)
	case "/prefix/api/v1/metadata":
		if p.noMeta {
			http.NotFound(w, r)
			return
		}
		name := r.Form.Get("metric")
		data := map[string]any{}
		for _, fams := range p.servers {
			if mf, ok := fams[name]; ok {
				data[name] = []map[string]string{{"type": strings.ToLower(mf.GetType().String()), "help": "", "unit": ""}}
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data})
	default:
		http.NotFound(w, r)
	}
}

func (p *prom) series() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent
}

// vector is a family's series as an instant query returns them.
func vector(mf *dto.MetricFamily, target map[string]string) []series {
	var out []series
	add := func(name string, m *dto.Metric, extra map[string]string, v float64) {
		l := map[string]string{"__name__": name}
		for _, p := range m.Label {
			l[p.GetName()] = p.GetValue()
		}
		for k, v := range target {
			l[k] = v
		}
		for k, v := range extra {
			l[k] = v
		}
		out = append(out, series{Metric: l, Value: [2]any{1.7e9, strconv.FormatFloat(v, 'g', -1, 64)}})
	}
	name := mf.GetName()
	for _, m := range mf.Metric {
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			add(name, m, nil, m.GetCounter().GetValue())
		case dto.MetricType_GAUGE:
			add(name, m, nil, m.GetGauge().GetValue())
		case dto.MetricType_UNTYPED:
			add(name, m, nil, m.GetUntyped().GetValue())
		case dto.MetricType_HISTOGRAM:
			for _, b := range m.GetHistogram().Bucket {
				add(name+"_bucket", m, map[string]string{"le": model.SampleValue(b.GetUpperBound()).String()}, float64(b.GetCumulativeCount()))
			}
			add(name+"_sum", m, nil, m.GetHistogram().GetSampleSum())
			add(name+"_count", m, nil, float64(m.GetHistogram().GetSampleCount()))
		case dto.MetricType_SUMMARY:
			for _, q := range m.GetSummary().Quantile {
				add(name, m, map[string]string{"quantile": model.SampleValue(q.GetQuantile()).String()}, q.GetValue())
			}
			add(name+"_sum", m, nil, m.GetSummary().GetSampleSum())
			add(name+"_count", m, nil, float64(m.GetSummary().GetSampleCount()))
		}
	}
	return out
}

func text(t *testing.T, fams map[string]*dto.MetricFamily) string {
	t.Helper()
	var names []string
	for n := range fams {
		names = append(names, n)
	}
	slices.Sort(names)
	var sb strings.Builder
	for _, n := range names {
		if _, err := expfmt.MetricFamilyToText(&sb, fams[n]); err != nil {
			t.Fatal(err)
		}
	}
	return sb.String()
}

func serve(t testing.TB, p *prom) string {
	t.Helper()
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL + "/prefix/"
}

func names(fams map[string]*dto.MetricFamily) []string {
	var out []string
	for n := range fams {
		out = append(out, n)
	}
	return out
}

func getAll(t *testing.T, s *Source) (map[string]Server, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.Get(ctx)
}

// TestSameAsScrape: every server's families read through the API are
// those a direct scrape of its exposition gives (vLLM's, SGLang's and
// TGI's recorded ones, a counter without _total and a summary beside),
// grouped by their version label; without Prometheus' metadata, a
// counter without _total and the gauges are untyped, and every value
// the same.
func TestSameAsScrape(t *testing.T) {
	var expos []string
	for _, f := range []string{"vllm-sim", "sglang", "tgi"} {
		b, err := os.ReadFile("../telemetry/testdata/" + f + ".txt")
		if err != nil {
			t.Fatal(err)
		}
		expos = append(expos, string(b))
	}
	p := &prom{servers: map[string]map[string]*dto.MetricFamily{}, groups: map[string]string{}}
	want := map[string]string{}
	var all []string
	for i, e := range expos {
		for j, g := range []string{"stable", "canary"} {
			inst := fmt.Sprintf("10.0.%d.%d:8000", i, j)
			p.servers[inst] = parse(t, e+extra)
			p.groups[inst] = g
			want[inst] = text(t, parse(t, e+extra))
			all = append(all, names(p.servers[inst])...)
		}
	}
	url := serve(t, p)
	s, err := New(Config{URL: url, Match: `{job="vllm"}`, By: "version", Names: append(all, "not_there")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := getAll(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d servers, want %d", len(got), len(want))
	}
	for inst, w := range want {
		if g := text(t, got[inst].Families); g != w {
			t.Errorf("%s: got\n%s\nwant\n%s", inst, g, w)
		}
		if got[inst].Group != p.groups[inst] {
			t.Errorf("%s: group %q, want %q", inst, got[inst].Group, p.groups[inst])
		}
	}
	if q := p.queries[0]; !strings.HasPrefix(q, `{__name__=~"(?:`) || !strings.HasSuffix(q, `)(?:_bucket|_sum|_count|_total)?",job="vllm"}`) {
		t.Errorf("query %s", q)
	}
	// Metadata is asked once a name: a second Get asks for none.
	asked := len(p.auth)
	if _, err := getAll(t, s); err != nil || len(p.auth) != asked+1 {
		t.Errorf("%d requests for the second Get (%v)", len(p.auth)-asked, err)
	}

	p.noMeta = true
	s, _ = New(Config{URL: url, Match: `job="vllm"`, By: "version", Names: all})
	got, err = getAll(t, s)
	if err != nil {
		t.Fatal(err)
	}
	fams := got["10.0.2.0:8000"].Families
	if c := fams["tgi_request_count"]; c.GetType() != dto.MetricType_UNTYPED || c.Metric[0].GetUntyped().GetValue() != 42 {
		t.Errorf("without metadata: %v", c)
	}
	if c := fams["tgi_queue_size"]; c.GetType() != dto.MetricType_UNTYPED {
		t.Errorf("a gauge without metadata: %v", c)
	}
	if c := got["10.0.0.0:8000"].Families["vllm:prompt_tokens_total"]; c.GetType() != dto.MetricType_COUNTER {
		t.Errorf("a _total without metadata: %v", c)
	}
}

// TestMatch: matchers are read and quoted anew; anything else is refused
// in one line.
func TestMatch(t *testing.T) {
	for in, want := range map[string]string{
		`{job="vllm"}`:                          `job="vllm"`,
		`job='vllm', namespace=~"prod-.*"`:      `job="vllm",namespace=~"prod-.*"`,
		"{ a != `x\"y` , b!~\"c|d\" }":          `a!="x\"y",b!~"c|d"`,
		`{}`:                                    ``,
		`{model_name="Qwen/Qwen3-8B",le!="1"}`:  `model_name="Qwen/Qwen3-8B",le!="1"`,
		`{job="a\"}) or vector(1) or up{x=\""}`: `job="a\"}) or vector(1) or up{x=\""`,
	} {
		got, err := parseMatch(in)
		if err != nil || strings.Join(got, ",") != want {
			t.Errorf("%s: %s, %v; want %s", in, strings.Join(got, ","), err, want)
		}
	}
	for _, bad := range []string{`{job="vllm"`, `job`, `job=vllm`, `{job="a"}) or vector(1`, `9x="a"`, `a=~"("`, `a="b" c="d"`, `a="b`, `a=`} {
		if got, err := parseMatch(bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, %v", bad, got, err)
		}
	}
}

// TestConfigErrors: a Config that cannot be asked is a one-line error,
// without the URL's password.
func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{URL: "ftp://u:hunter22@prom:9090", Names: []string{"a"}},
		{URL: "http://u:hunter22@", Names: []string{"a"}},
		{URL: "http://u:hunter22@prom:9090"},
		{URL: "http://u:hunter22@prom:9090", Names: []string{"a"}, Match: "job"},
		{URL: "http://u:hunter22@prom:9090", Names: []string{"a"}, By: "not a label"},
	} {
		_, err := New(c)
		if err == nil || strings.Contains(err.Error(), "hunter22") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// TestCredentials: a URL's user and password go as basic authentication,
// a token as a bearer; neither is in an error, and no redirect is
// followed with them.
func TestCredentials(t *testing.T) {
	elsewhere := &prom{}
	other := serve(t, elsewhere)
	p := &prom{servers: map[string]map[string]*dto.MetricFamily{"a:1": parse(t, extra)}}
	url := serve(t, p)
	s, err := New(Config{URL: strings.Replace(url, "http://", "http://alice:hunter22@", 1), Names: []string{"tgi_request_count"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := getAll(t, s); err != nil || len(got) != 1 || p.auth[0] != "Basic YWxpY2U6aHVudGVyMjI=" {
		t.Errorf("%v, %v, %q", got, err, p.auth)
	}
	if strings.Contains(s.String(), "hunter22") {
		t.Errorf("String %s", s)
	}
	p.hook = func(w http.ResponseWriter, r *http.Request) bool {
		http.Redirect(w, r, other+"api/v1/query?token=hunter22", http.StatusTemporaryRedirect)
		return true
	}
	for _, cfg := range []Config{
		{URL: strings.Replace(url, "http://", "http://alice:hunter22@", 1), Names: []string{"a"}},
		{URL: url, Token: "tok-hunter22", Names: []string{"a"}},
	} {
		s, _ := New(cfg)
		_, err := getAll(t, s)
		if err == nil || !strings.Contains(err.Error(), "redirect") || strings.Contains(err.Error(), "hunter22") {
			t.Errorf("a redirect: %v", err)
		}
	}
	if len(elsewhere.auth) != 0 {
		t.Errorf("the redirect was followed: %q", elsewhere.auth)
	}
}

// TestHostile: what a broken or hostile server sends is bounded in
// memory and an error of one line: a 100 MB body, a million series,
// garbage, a series of a million labels, an error with escapes, a
// matrix; what cannot be used (native histograms, a series without its
// instance, a server in two groups) is left out and said.
func TestHostile(t *testing.T) {
	ok := `{"status":"success","data":{"resultType":"vector","result":[`
	// Made before the heap is measured: the server's memory is not the
	// client's.
	longLabel := []byte(ok + `{"metric":{"__name__":"a","instance":"` + strings.Repeat("x", 20<<20) + `"},"value":[1,"1"]}]}}`)
	for _, c := range []struct {
		name string
		body func(w http.ResponseWriter)
		want string
	}{
		{"100 MB", func(w http.ResponseWriter) {
			_, _ = w.Write([]byte(ok + `{"metric":{"__name__":"`))
			chunk := []byte(strings.Repeat("x", 1<<20))
			for range 100 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, "more than 32 MiB"},
		{"a million series", func(w http.ResponseWriter) {
			_, _ = w.Write([]byte(ok))
			thousand := []byte(strings.Repeat(`{"metric":{"__name__":"a","instance":"i"},"value":[1,"1"]},`, 1000))
			for range 1000 {
				if _, err := w.Write(thousand); err != nil {
					return
				}
			}
		}, "more than 32 MiB"},
		{"a million series in 25 MB", func(w http.ResponseWriter) {
			_, _ = w.Write([]byte(ok + `{"metric":{},"value":[]}` + strings.Repeat(`,{"metric":{},"value":[]}`, 1e6) + "]}}"))
		}, "more than 100000 series"},
		{"1,000 series past the bound of 500", func(w http.ResponseWriter) {
			_, _ = w.Write([]byte(ok))
			for i := range 1000 {
				fmt.Fprintf(w, `{"metric":{"__name__":"a","instance":"i%d"},"value":[1,"1"]},`, i)
			}
			_, _ = w.Write([]byte(`{}]}}`))
		}, "more than 500 series"},
		{"100,000 labels", func(w http.ResponseWriter) {
			var sb strings.Builder
			sb.WriteString(ok + `{"metric":{"__name__":"a"`)
			for i := range 100_000 {
				sb.WriteString(`,"l` + strconv.Itoa(i) + `":""`)
			}
			sb.WriteString(`},"value":[1,"1"]}]}}`)
			_, _ = w.Write([]byte(sb.String()))
		}, "more than 128 labels"},
		{"a label of 20 MB", func(w http.ResponseWriter) { _, _ = w.Write(longLabel) }, "a string of 20480 KB"},
		{"garbage", func(w http.ResponseWriter) { _, _ = w.Write([]byte("\x1b]0;pwned\x07<html>\n")) }, "not the Prometheus API"},
		{"an error", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"parse error\n\u001b[2J at char 3"}`))
		}, "bad_data: parse error"},
		{"a matrix", func(w http.ResponseWriter) {
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
		}, "not a vector"},
		{"a bad value", func(w http.ResponseWriter) {
			_, _ = w.Write([]byte(ok + `{"metric":{"__name__":"a","instance":"i"},"value":[1,"twelve"]}]}}`))
		}, "value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &prom{hook: func(w http.ResponseWriter, r *http.Request) bool { c.body(w); return true }}
			s, err := New(Config{URL: serve(t, p), Token: "tok-hunter22", Names: []string{"a"}, MaxSeries: map[bool]int{true: 500}[strings.Contains(c.name, "500")]})
			if err != nil {
				t.Fatal(err)
			}
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			got, err := getAll(t, s)
			runtime.ReadMemStats(&m1)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.ContainsAny(err.Error(), "\n\x1b\x07") || strings.Contains(err.Error(), "hunter22") {
				t.Errorf("%d servers, error %q", len(got), err)
			}
			if grew := int64(m1.TotalAlloc-m0.TotalAlloc) >> 20; grew > 200 {
				t.Errorf("%d MB allocated", grew)
			}
		})
	}
	// Left out and said: the rest is kept.
	p := &prom{hook: func(w http.ResponseWriter, r *http.Request) bool {
		_, _ = w.Write([]byte(ok + `{"metric":{"__name__":"a","instance":"i","version":"v1"},"value":[1,"1"]},` +
			`{"metric":{"__name__":"a","instance":"i","version":"v2","x":"y"},"value":[1,"2"]},` +
			`{"metric":{"__name__":"a"},"value":[1,"3"]},` +
			`{"metric":{"__name__":"a","instance":"j"},"histogram":[1,{"count":"1","sum":"1","buckets":[]}]},` +
			`{"metric":{"__name__":"unwanted","instance":"k"},"value":[1,"NaN"]}]}}`))
		return true
	}}
	s, _ := New(Config{URL: serve(t, p), By: "version", Names: []string{"a"}})
	got, err := getAll(t, s)
	if len(got) != 1 || got["i"].Group != "v1" || len(got["i"].Families["a"].Metric) != 2 || err == nil {
		t.Fatalf("%v: %v", got, err)
	}
	for _, want := range []string{"1 native histogram series", `1 series without the label "instance"`, `two values of "version" for one server (i)`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	_ = math.Inf
}

// TestLongLabelLeftOut: a series with a label past 4 KB is left out and
// said; the other servers are read.
func TestLongLabelLeftOut(t *testing.T) {
	p := &prom{hook: func(w http.ResponseWriter, r *http.Request) bool {
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[` +
			`{"metric":{"__name__":"a","instance":"i","model":"` + strings.Repeat("m", 5<<10) + `"},"value":[1,"1"]},` +
			`{"metric":{"__name__":"a","instance":"j"},"value":[1,"2"]}]}}`))
		return true
	}}
	s, err := New(Config{URL: serve(t, p), Names: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := getAll(t, s)
	if len(got) != 1 || got["j"].Families == nil || err == nil || !strings.Contains(err.Error(), "1 series with a label past 4 KB left out") {
		t.Fatalf("%v: %v", got, err)
	}
}

// TestServersBounded: an answer naming 90,000 servers of a series each
// (they cost a watch 928 MB) keeps at most MaxServers, half of them a
// group at most, so that the canary's servers, named last, are kept;
// the rest is said in one note.
func TestServersBounded(t *testing.T) {
	const n = 90_000
	var sb strings.Builder
	sb.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		group := "stable"
		if i >= n-3 {
			group = "canary"
		}
		fmt.Fprintf(&sb, `{"metric":{"__name__":"a","instance":"i%d","version":%q},"value":[1,"1"]}`, i, group)
	}
	sb.WriteString(`]}}`)
	body := []byte(sb.String())
	p := &prom{hook: func(w http.ResponseWriter, r *http.Request) bool { _, _ = w.Write(body); return true }}
	s, err := New(Config{URL: serve(t, p), By: "version", Names: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := getAll(t, s)
	groups := map[string]int{}
	for _, sv := range got {
		groups[sv.Group]++
	}
	if len(got) > MaxServers || groups["canary"] != 3 || groups["stable"] != MaxServers/2 {
		t.Errorf("%d servers kept, by group %v; want at most %d, the canary's 3", len(got), groups, MaxServers)
	}
	if err == nil || !strings.Contains(err.Error(), "series of servers past 4096") {
		t.Errorf("error %v, want the servers left out said", err)
	}
}
