package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromium runs headless Chromium on page with args added, the network
// shut (no proxy reaches anything, no name resolves) and its own profile,
// and returns its stdout and stderr. The background-networking flags keep
// it from calling home on a machine whose network is closed.
func chromium(t *testing.T, bin, page string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--no-first-run", "--disable-quic", "--user-data-dir=" + t.TempDir(),
		"--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0"}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), "file://"+page)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, errb.String())
	}
	return out.String(), errb.String()
}

var (
	svgRe  = regexp.MustCompile(`(?s)<svg class="chart" id="([^"]+)" data-lines="(\d+)".*?</svg>`)
	pathRe = regexp.MustCompile(`<path class="line[^"]*" data-series="([^"]*)" d="([^"]*)"`)
)

// checkCharts holds that every chart in the DOM drew: as many line paths
// as it has series, each with at least two points; it returns the charts
// seen.
func checkCharts(dom string) (map[string]bool, error) {
	seen := map[string]bool{}
	for _, m := range svgRe.FindAllStringSubmatch(dom, -1) {
		id, want := m[1], m[2]
		paths := pathRe.FindAllStringSubmatch(m[0], -1)
		if strconv.Itoa(len(paths)) != want {
			return seen, fmt.Errorf("chart %s: %d paths, want %s", id, len(paths), want)
		}
		for _, p := range paths {
			if !strings.Contains(p[2], "L") {
				return seen, fmt.Errorf("chart %s: series %q drew no line (d=%q)", id, p[1], p[2])
			}
		}
		seen[id] = true
	}
	return seen, nil
}

// TestHTMLReportInBrowser writes the HTML report of a real headless run
// (the embedded sim, whose GPU readings give the power charts) and opens
// it in headless Chromium with the network shut: the page loads without a
// console message, every chart drew one path per series, and a screenshot
// is kept. A report with a chart's data missing fails the same check.
func TestHTMLReportInBrowser(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium (.ci/run installs Debian's)")
	}
	dir := t.TempDir()
	jsonPath, htmlPath := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.html")
	var out, errb bytes.Buffer
	if code := run([]string{"run", "--stages", "concurrency=3,duration=2s;concurrency=8,duration=2500ms",
		"--prompt-tokens", "64", "--output-tokens", "24", "--json", jsonPath, "--html", htmlPath}, &out, &errb); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errb.String())
	}
	dom, logs := chromium(t, bin, htmlPath, "--dump-dom")
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, ":CONSOLE") {
			t.Errorf("console: %s", l)
		}
	}
	seen, err := checkCharts(dom)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"ttft-time", "e2e-time", "tokens-time", "requests-time", "inflight-time", "ttft-dist", "e2e-dist", "power-time", "jpt-time"} {
		if !seen[id] {
			t.Errorf("chart %s missing; drew %v", id, seen)
		}
	}
	shot := filepath.Join(os.TempDir(), "infertop-report.png")
	os.Remove(shot)
	chromium(t, bin, htmlPath, "--window-size=1000,4200", "--hide-scrollbars", "--screenshot="+shot)
	if st, err := os.Stat(shot); err != nil || st.Size() < 10000 {
		t.Fatalf("screenshot: %v", err)
	}
	t.Logf("screenshot: %s", shot)

	// The same run with its TTFT p50 column emptied: that chart's line
	// has no points, and the check says so.
	doc, _ := os.ReadFile(jsonPath)
	var res map[string]any
	if err := json.Unmarshal(doc, &res); err != nil {
		t.Fatal(err)
	}
	lat := res["infertop"].(map[string]any)["series"].(map[string]any)["latency_ms"].(map[string]any)
	lat["ttft_p50"] = make([]any, len(lat["ttft_p50"].([]any)))
	broken, _ := json.Marshal(res)
	brokenJSON, brokenHTML := filepath.Join(dir, "broken.json"), filepath.Join(dir, "broken.html")
	os.WriteFile(brokenJSON, broken, 0o644)
	if code := run([]string{"report", brokenJSON, "-o", brokenHTML}, &out, &errb); code != 0 {
		t.Fatalf("report: exit %d: %s", code, errb.String())
	}
	dom, _ = chromium(t, bin, brokenHTML, "--dump-dom")
	if _, err := checkCharts(dom); err == nil || !strings.Contains(err.Error(), "ttft-time") {
		t.Fatalf("a chart missing its data passed the check: %v", err)
	}
}
