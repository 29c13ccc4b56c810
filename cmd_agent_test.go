package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/report/merge"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

// TestTwoAgents: two agents on 127.0.0.1 share one load against one sim:
// the concurrency and the request count split with the remainder spread,
// seeds of their own, each state served to the token and refused (and
// logged) without it; their results merge to the whole.
func TestTwoAgents(t *testing.T) {
	t.Parallel()
	p, _ := sim.Preset("fast")
	srv := simtest.Start(t, p)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	token := "a-token-of-more-than-sixteen-bytes"
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The common start, a little ahead: both wait for it.
	startAt := time.Now().Add(300 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	type agentRun struct {
		stderr lockedBuffer
		code   int
		json   string
	}
	agents := make([]*agentRun, 2)
	var wg sync.WaitGroup
	for i := range agents {
		ar := &agentRun{json: filepath.Join(dir, "agent"+string(rune('0'+i))+".json")}
		agents[i] = ar
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			ar.code = run([]string{"agent", "--index", string(rune('0' + i)), "--of", "2", "--start-at", startAt, "--listen", "127.0.0.1:0",
				"--plain-http-loopback", "--token-file", tokenFile, "--linger", "0", "--url", srv.URL, "--server-metrics", "off", "-c", "5", "--requests", "61",
				"--duration", "30s", "--prompt-tokens", "16", "--output-tokens", "40", "--json", ar.json}, &out, &ar.stderr)
		}()
	}
	addr := regexp.MustCompile(`serving on (127\.0\.0\.1:\d+)`)
	get := func(a, tok string) (*http.Response, agent.State) {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+a+"/state", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st agent.State
		if resp.StatusCode == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
				t.Fatal(err)
			}
		}
		return resp, st
	}
	var seeds []uint64
	var live []merge.Input
	for i, ar := range agents {
		var a string
		deadline := time.Now().Add(20 * time.Second)
		for a == "" && time.Now().Before(deadline) {
			if m := addr.FindStringSubmatch(ar.stderr.String()); m != nil {
				a = m[1]
			}
			time.Sleep(5 * time.Millisecond) // polling for the event: the line
		}
		if a == "" {
			t.Fatalf("agent %d never served: %s", i, ar.stderr.String())
		}
		if resp, _ := get(a, "wrong-token-of-more-than-sixteen"); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("a wrong token: %s", resp.Status)
		}
		if resp, _ := get(a, ""); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("no token: %s", resp.Status)
		}
		var st agent.State
		for time.Now().Before(deadline) {
			var resp *http.Response
			resp, st = get(a, token)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("the token: %s", resp.Status)
			}
			if st.Completed > 0 || st.Done {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if want := []int{3, 2}[i]; st.Index != i || st.Of != 2 || st.Concurrency != want || st.Completed == 0 {
			t.Errorf("agent %d: %+v, want concurrency %d and requests completed", i, st, want)
		}
		if st.Sent != st.Completed+st.Failed+st.Incomplete+st.InFlight {
			t.Errorf("agent %d: sent %d is not the sum", i, st.Sent)
		}
		if st.OffsetMS < 0 || st.StartAt == nil {
			t.Errorf("agent %d started %.1f ms from the start (%v)", i, st.OffsetMS, st.StartAt)
		}
		seeds = append(seeds, st.Seed)
		// The result so far: a run's JSON, with its histograms.
		req, _ := http.NewRequest(http.MethodGet, "http://"+a+"/result", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("agent %d's /result: %s %v", i, resp.Status, err)
		}
		in, err := merge.Decode("agent"+string(rune('0'+i)), b)
		if err != nil {
			t.Fatalf("agent %d's /result: %v", i, err)
		}
		live = append(live, in)
	}
	// The live results merge as the final ones do.
	if m, err := merge.Merge(live, merge.Options{}); err != nil || m.Result.Run.Sent != live[0].Result.Run.Sent+live[1].Result.Run.Sent {
		t.Errorf("the live results merged: %v", err)
	}
	wg.Wait()
	if seeds[0] == seeds[1] {
		t.Errorf("both agents drew seed %d", seeds[0])
	}
	for i, ar := range agents {
		if ar.code != 0 {
			t.Fatalf("agent %d: exit %d: %s", i, ar.code, ar.stderr.String())
		}
		if !strings.Contains(ar.stderr.String(), "refused GET /state") || strings.Contains(ar.stderr.String(), "wrong-token") || strings.Contains(ar.stderr.String(), token) {
			t.Errorf("agent %d's log of refusals: %s", i, ar.stderr.String())
		}
	}
	// The two results are the whole: 61 requests, 31 and 30.
	var out, errb bytes.Buffer
	all := filepath.Join(dir, "all.json")
	if code := run([]string{"merge", agents[0].json, agents[1].json, "-o", all}, &out, &errb); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, errb.String())
	}
	if sent := []int64{sentOf(t, agents[0].json), sentOf(t, agents[1].json), sentOf(t, all)}; sent[0] != 31 || sent[1] != 30 || sent[2] != 61 {
		t.Errorf("sent %v, want 31, 30 and 61", sent)
	}
}

// TestJobArgsParse: the arguments deploy/kubernetes/job.yaml gives the
// agent are flags `infertop agent` has, with its environment's values
// in place of $(VAR).
func TestJobArgsParse(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("deploy/kubernetes/job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The Job's fields this reads; deploy/kubernetes decodes the whole of
	// it strictly with the Kubernetes types (a stage of its own: those
	// types take a minute to build under -race).
	var job struct {
		Spec struct {
			Parallelism *int32 `json:"parallelism"`
			Template    struct {
				Spec struct {
					Containers []struct {
						Args []string `json:"args"`
						Env  []struct {
							Name  string `json:"name"`
							Value string `json:"value"`
						} `json:"env"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &job); err != nil {
		t.Fatal(err)
	}
	c := job.Spec.Template.Spec.Containers[0]
	env := map[string]string{"JOB_COMPLETION_INDEX": "3"}
	for _, e := range c.Env {
		if e.Value != "" {
			env[e.Name] = e.Value
		}
	}
	var args []string
	for _, a := range c.Args[1:] { // after the command's name
		args = append(args, regexp.MustCompile(`\$\(([A-Z_]+)\)`).ReplaceAllStringFunc(a, func(m string) string { return env[m[2:len(m)-1]] }))
	}
	if c.Args[0] != "agent" {
		t.Fatalf("the job runs %q", c.Args[0])
	}
	fs, _, _, _, af := (&app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}).agentFlagSet()
	if err := fs.Parse(args); err != nil {
		t.Fatalf("the job's arguments: %v", err)
	}
	headers, _ := fs.GetStringArray("header")
	if af.Index != 3 || af.Of != int(*job.Spec.Parallelism) || af.TokenFile == "" || af.TLSCert == "" || af.PlainLoopback || len(headers) != 1 {
		t.Errorf("parsed %+v, headers %d", af, len(headers))
	}
	if _, err := time.Parse(time.RFC3339Nano, af.StartAt); err != nil {
		t.Errorf("START_AT: %v", err)
	}
}
