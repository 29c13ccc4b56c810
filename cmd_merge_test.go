package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/report/schematest"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

// mergeRun is one headless run of the merge test: its JSON and its
// requests log.
type mergeRun struct{ json, log string }

// runForMerge runs `infertop run` with args, writing dir/name.json and
// dir/name.jsonl.
func runForMerge(t *testing.T, dir, name string, args []string) mergeRun {
	t.Helper()
	r := mergeRun{filepath.Join(dir, name+".json"), filepath.Join(dir, name+".jsonl")}
	var out, errb bytes.Buffer
	if code := run(append(append([]string{"run"}, args...), "--json", r.json, "--requests-log", r.log), &out, &errb); code != 0 {
		t.Errorf("run %s: exit %d\n%s\n%s", name, code, out.String(), errb.String())
	}
	return r
}

// logFigures are the figures of the union of requests logs, computed
// from every request.
type logFigures struct {
	sent, completed, failed int64
	ttft, e2e               []float64 // ms, sorted
}

func readLogs(t *testing.T, paths ...string) logFigures {
	t.Helper()
	var f logFigures
	for _, p := range paths {
		fh, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var l report.RequestLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatal(err)
			}
			f.sent++
			if l.Class != "ok" {
				f.failed++
				continue
			}
			f.completed++
			if l.TTFT != nil {
				f.ttft = append(f.ttft, *l.TTFT)
			}
			f.e2e = append(f.e2e, l.E2E)
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(f.ttft)
	slices.Sort(f.e2e)
	return f
}

// exactQuantile is the value at rank ceil(q·n) of sorted, as HdrHistogram
// ranks a percentile.
// exactQuantile is the q quantile of sorted by HdrHistogram's rank: the
// value at rank round(q×n), not ceil(q×n) (at 76 requests the p99 is the
// 75th, not the largest).
func exactQuantile(sorted []float64, q float64) float64 {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func mean(vs []float64) float64 {
	s := 0.0
	for _, v := range vs {
		s += v
	}
	return s / float64(len(vs))
}

// TestMergeEqualsUnionOfLogs: two runs side by side against one sim,
// merged with `infertop merge`: the merged counters are the sums and its
// TTFT and E2E percentiles those of the union of the two requests logs
// within HdrHistogram's precision; the merged result matches the schema
// and `infertop report` draws it. A run of other knobs is refused by
// name, and merged with --force.
func TestMergeEqualsUnionOfLogs(t *testing.T) {
	t.Parallel()
	p, _ := sim.Preset("fast")
	srv := simtest.Start(t, p)
	dir := t.TempDir()
	args := []string{"--url", srv.URL, "--server-metrics", "off", "-c", "4", "--requests", "150", "--duration", "20s",
		"--prompt-tokens", "16", "--output-tokens", "6", "--drain", "5s"}
	var a, b mergeRun
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a = runForMerge(t, dir, "a", append(args, "--seed", "1")) }()
	go func() { defer wg.Done(); b = runForMerge(t, dir, "b", append(args, "--seed", "2")) }()
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	all := filepath.Join(dir, "all.json")
	var out, errb bytes.Buffer
	if code := run([]string{"merge", a.json, b.json, "-o", all}, &out, &errb); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, errb.String())
	}
	doc, err := os.ReadFile(all)
	if err != nil {
		t.Fatal(err)
	}
	schematest.Validate(t, doc)
	var res struct {
		Sent      int64   `json:"sent"`
		Completed int64   `json:"completed"`
		P99TTFT   float64 `json:"p99_ttft_ms"`
		Infertop  report.InfertopJSON
	}
	if err := json.Unmarshal(doc, &res); err != nil {
		t.Fatal(err)
	}
	whole := res.Infertop.Run
	logs := readLogs(t, a.log, b.log)
	if whole.Sent != whole.Completed+whole.Failed+whole.Incomplete || res.Sent != whole.Sent || res.Completed != whole.Completed {
		t.Errorf("merged: sent %d (top %d), completed %d (top %d), failed %d, incomplete %d", whole.Sent, res.Sent, whole.Completed, res.Completed, whole.Failed, whole.Incomplete)
	}
	if whole.Completed != logs.completed || whole.Failed != logs.failed || whole.Sent != logs.sent+whole.Incomplete {
		t.Errorf("merged sent %d, completed %d, failed %d; the logs %d, %d, %d", whole.Sent, whole.Completed, whole.Failed, logs.sent, logs.completed, logs.failed)
	}
	if m := res.Infertop.Merged; m == nil || len(m.Runs) != 2 || m.Series != report.MergedSeries || m.Runs[0].Series == nil || len(m.Forced) > 0 {
		t.Errorf("infertop.merged: %+v", m)
	}
	if len(res.Infertop.Phases) != 1 || res.Infertop.Phases[0].Sent != whole.Sent {
		t.Errorf("merged phases: %+v", res.Infertop.Phases)
	}
	for _, m := range []struct {
		key string
		all []float64
	}{{"ttft", logs.ttft}, {"e2el", logs.e2e}} {
		d := whole.Latency[m.key]
		if d.Count != int64(len(m.all)) {
			t.Errorf("%s: merged count %d, the logs %d", m.key, d.Count, len(m.all))
			continue
		}
		// HdrHistogram at 3 digits: a value's bucket is within 0.1 %; the
		// engine records whole microseconds, the log nanoseconds.
		near := func(got, want float64) bool { return math.Abs(got-want) <= want*0.001+0.002 }
		for _, q := range []struct {
			name string
			got  float64
			q    float64
		}{{"p50", d.P50, 0.50}, {"p90", d.P90, 0.90}, {"p99", d.P99, 0.99}} {
			want := exactQuantile(m.all, q.q)
			t.Logf("%s %s: merged %.3f ms, union of the logs %.3f ms", m.key, q.name, q.got, want)
			if !near(q.got, want) {
				t.Errorf("%s %s: merged %.3f ms, the union of the logs %.3f ms", m.key, q.name, q.got, want)
			}
		}
		t.Logf("%s mean: merged %.3f ms, union of the logs %.3f ms; max %.3f / %.3f", m.key, d.Mean, mean(m.all), d.Max, m.all[len(m.all)-1])
		if !near(d.Mean, mean(m.all)) || !near(d.Max, m.all[len(m.all)-1]) || !near(d.Min, m.all[0]) {
			t.Errorf("%s: merged mean %.3f, min %.3f, max %.3f; the logs %.3f, %.3f, %.3f", m.key, d.Mean, d.Min, d.Max, mean(m.all), m.all[0], m.all[len(m.all)-1])
		}
	}
	t.Logf("merged: sent %d = completed %d + failed %d + incomplete %d; the logs: %d requests, %d ok", whole.Sent, whole.Completed, whole.Failed, whole.Incomplete, logs.sent, logs.completed)
	if res.P99TTFT != whole.Latency["ttft"].P99 {
		t.Errorf("top p99_ttft_ms %v, infertop.run's %v", res.P99TTFT, whole.Latency["ttft"].P99)
	}

	// A merge is a result that merges again; with itself it is one run
	// given twice, its requests not counted twice (issue 40).
	var again bytes.Buffer
	errb.Reset()
	if code := run([]string{"merge", all, all, "-o", "-"}, &again, &errb); code != 2 || !strings.Contains(errb.String(), "the same run as all (counted once)") {
		t.Fatalf("merge of a merge with itself: exit %d: %s", code, errb.String())
	}
	if code := run([]string{"report", all, "-o", filepath.Join(dir, "all.html")}, &out, &errb); code != 0 {
		t.Fatalf("report of the merge: exit %d: %s", code, errb.String())
	}

	// Other knobs: refused by name in one line, merged with --force.
	c := runForMerge(t, dir, "c", []string{"--url", srv.URL, "--server-metrics", "off", "-c", "2", "--requests", "10", "--duration", "20s",
		"--prompt-tokens", "16", "--output-tokens", "6"})
	errb.Reset()
	if code := run([]string{"merge", a.json, c.json, "-o", filepath.Join(dir, "refused.json")}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "other knobs") || strings.Count(strings.TrimSpace(errb.String()), "\n") > 0 {
		t.Errorf("other knobs: exit %d: %q", code, errb.String())
	}
	errb.Reset()
	forced := filepath.Join(dir, "ac.json")
	if code := run([]string{"merge", a.json, c.json, "-o", forced, "--force"}, &out, &errb); code != 0 {
		t.Fatalf("--force: exit %d: %s", code, errb.String())
	}
	fdoc, err := os.ReadFile(forced)
	if err != nil {
		t.Fatal(err)
	}
	schematest.Validate(t, fdoc)
	if !bytes.Contains(fdoc, []byte("other knobs")) {
		t.Error("the forced merge does not name what differed")
	}
}

// sentOf is the requests a result sent.
func sentOf(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ Sent int64 }
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r.Sent
}
