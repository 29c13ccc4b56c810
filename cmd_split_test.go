package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rollingServer is one URL served by two backends in turn, as a rolling
// update's old and new pods behind a balancer: each answer names its
// backend in X-Backend and in system_fingerprint; the new one takes slow
// times as long (a sleep before and between its chunks).
func rollingServer(t *testing.T, slow float64) *httptest.Server {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		// The first 16 requests the old backend's, then every other: the
		// first answer (the baseline group) is the old one's whatever the
		// machine's load, as when the new pods come up later.
		name, fp, f := "old", "fp_old", 1.0
		if i := n.Add(1); i > 16 && i%2 == 0 {
			name, fp, f = "new", "fp_new", slow
		}
		step := time.Duration(float64(2*time.Millisecond) * f)
		w.Header().Set("X-Backend", name)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		time.Sleep(4 * step) // the prefill
		for i := range 4 {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"system_fingerprint\":%q,\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w%d \"},\"finish_reason\":null}]}\n\n", fp, i)
			fl.Flush()
			time.Sleep(step)
		}
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"model\":\"m\",\"system_fingerprint\":%q,\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n", fp)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRunSplit: the exit codes of a split: 2 for usage errors; 1 when the
// newer group (30 % slower) breaches e2el_p50<+10% with confidence, by
// header and by field; 0 when both groups are alike. The minimum seconds
// are lowered (the hidden --compare-min-seconds) so each run takes 4 s.
func TestRunSplit(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--split-by", "cookie:x"},
		{"run", "--split-by", "field:id"},
		{"run", "--split-by", "header:X-Backend", "--compare", "http://127.0.0.1:1/v1"},
		{"run", "--split-by", "header:X-Backend", "--regression", "e2el_p50<10ms"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
	for _, tc := range []struct {
		name, by string
		slow     float64
		code     int
	}{
		{"header", "header:X-Backend", 1.3, 1},
		{"field", "field:system_fingerprint", 1.3, 1},
		{"alike", "header:x-backend", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := rollingServer(t, tc.slow)
			jsonPath := filepath.Join(t.TempDir(), "run.json")
			var out, errb bytes.Buffer
			start := time.Now()
			code := run([]string{"run", "--url", srv.URL + "/v1", "--api", "openai-chat", "--model", "m", "--server-metrics", "off",
				"--duration", "4s", "-c", "8", "--prompt-tokens", "8", "--output-tokens", "4", "--split-by", tc.by,
				"--regression", "e2el_p50<+10%", "--compare-min-seconds", "3", "--json", jsonPath}, &out, &errb)
			t.Logf("%s: exit %d in %v", tc.name, code, time.Since(start).Round(time.Millisecond))
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, out.String(), errb.String())
			}
			want := []string{"Split by " + tc.by[:strings.Index(tc.by, ":")], "baseline: group 1 (", "Comparison · group 1 ("}
			if tc.code == 1 {
				want = append(want, "e2el_p50<+10%: breached", "group 2 (", ") slower: ")
			} else {
				want = append(want, "e2el_p50<+10%: held")
			}
			for _, w := range want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("no %q in\n%s", w, out.String())
				}
			}
			raw, err := os.ReadFile(jsonPath)
			if err != nil {
				t.Fatal(err)
			}
			var j struct {
				Infertop struct {
					Compare struct {
						SplitBy  string `json:"split_by"`
						Baseline struct {
							Group string `json:"group"`
						} `json:"baseline_group"`
						Groups []struct {
							Group   string            `json:"group"`
							Metrics []json.RawMessage `json:"metrics"`
						} `json:"groups"`
						Regressed bool `json:"regressed"`
					} `json:"compare"`
				} `json:"infertop"`
			}
			if err := json.Unmarshal(raw, &j); err != nil {
				t.Fatal(err)
			}
			c := j.Infertop.Compare
			old, new := "old", "new"
			if tc.by == "field:system_fingerprint" {
				old, new = "fp_old", "fp_new"
			}
			if c.SplitBy == "" || c.Baseline.Group != old || len(c.Groups) != 1 || c.Groups[0].Group != new ||
				len(c.Groups[0].Metrics) == 0 || c.Regressed != (tc.code == 1) {
				t.Errorf("infertop.compare: %+v", c)
			}
		})
	}
}

// TestRunSplitSimCanary: the embedded sim's canary (--sim-canary, three
// times slower, from the second second on so the stable pod answers
// first) is split out by its header and by its system_fingerprint, and
// found slower: the sim's marks read end to end by the probe and the
// split.
func TestRunSplitSimCanary(t *testing.T) {
	for _, tc := range []struct{ by, stable, canary string }{
		{"header:X-Infertop-Backend", "stable", "canary"},
		{"field:system_fingerprint", "fp_sim_stable", "fp_sim_canary"},
	} {
		t.Run(tc.by, func(t *testing.T) {
			t.Parallel()
			jsonPath := filepath.Join(t.TempDir(), "run.json")
			var out, errb bytes.Buffer
			code := run([]string{"run", "--sim-preset", "fast", "--sim-canary", "0.5:3:0:1s", "--split-by", tc.by,
				"--duration", "5s", "-c", "8", "--prompt-tokens", "8", "--output-tokens", "8",
				"--regression", "e2el_p50<+10%", "--compare-min-seconds", "3", "--json", jsonPath}, &out, &errb)
			if code != 1 {
				t.Fatalf("exit %d, want 1\n%s\n%s", code, out.String(), errb.String())
			}
			for _, w := range []string{"baseline: group 1 (" + tc.stable + ")", "group 2 (" + tc.canary + ") slower: ", "e2el_p50<+10%: breached"} {
				if !strings.Contains(out.String(), w) {
					t.Errorf("no %q in\n%s", w, out.String())
				}
			}
			raw, err := os.ReadFile(jsonPath)
			if err != nil {
				t.Fatal(err)
			}
			var j struct {
				Infertop struct {
					Compare struct {
						Baseline struct {
							Group string `json:"group"`
						} `json:"baseline_group"`
						Groups []struct {
							Group string `json:"group"`
						} `json:"groups"`
					} `json:"compare"`
				} `json:"infertop"`
			}
			if err := json.Unmarshal(raw, &j); err != nil {
				t.Fatal(err)
			}
			if c := j.Infertop.Compare; c.Baseline.Group != tc.stable || len(c.Groups) != 1 || c.Groups[0].Group != tc.canary {
				t.Errorf("infertop.compare: %+v", c)
			}
		})
	}
}
