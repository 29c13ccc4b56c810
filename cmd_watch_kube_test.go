package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/infertop/infertop/sim/simfleet"
	"github.com/infertop/infertop/watch"
)

// TestWatchKubernetes: --k8s-selector finds the pods of a fake API
// server (each a sim on 127.0.0.1, its metrics port named "metrics"),
// groups them by their version label, and watches them: both groups,
// every server up, the canary named by --canary.
func TestWatchKubernetes(t *testing.T) {
	t.Parallel()
	f, err := simfleet.Start(t.Context(), simfleet.Config{Rate: 10, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	type port struct {
		Name          string `json:"name"`
		ContainerPort int    `json:"containerPort"`
	}
	var items []map[string]any
	for _, s := range f.Servers {
		u, err := url.Parse(s.MetricsURL)
		if err != nil {
			t.Fatal(err)
		}
		host, p, _ := net.SplitHostPort(u.Host)
		n, _ := strconv.Atoi(p)
		version := map[string]string{simfleet.BaselineGroup: "v1", simfleet.CanaryGroup: "v2"}[s.Group]
		items = append(items, map[string]any{
			"metadata": map[string]any{"name": s.Name, "labels": map[string]string{"app": "sim", "version": version}},
			"spec":     map[string]any{"containers": []any{map[string]any{"ports": []port{{Name: "metrics", ContainerPort: n}}}}},
			"status": map[string]any{"phase": "Running", "podIP": host,
				"conditions": []any{map[string]string{"type": "Ready", "status": "True"}}},
		})
	}
	var (
		mu    sync.Mutex
		asked []string
	)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		if r.URL.Path != "/api/v1/namespaces/infer/pods" || r.URL.Query().Get("labelSelector") != "app=sim" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"kind": "PodList", "apiVersion": "v1", "metadata": map[string]any{}, "items": items})
	}))
	t.Cleanup(api.Close)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "config")
	conf := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: %s\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: me\n    namespace: infer\nusers:\n- name: me\n  user:\n    token: hunter2\ncurrent-context: fake\n", api.URL)
	if err := os.WriteFile(kubeconfig, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "watch.json")
	var out, errb bytes.Buffer
	code := run([]string{"watch", "--headless", "--duration", "3s", "--every", "250ms", "--k8s-selector", "app=sim", "--by", "version",
		"--port", "metrics", "--canary", "v2", "--kubeconfig", kubeconfig, "--json", path}, &out, &errb)
	if code != 0 {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("exit %d: %s\nasked %v", code, errb.String(), asked)
	}
	s, _ := readWatchJSON(t, path)
	if len(s.Groups) != 2 || s.Groups[0].Name != "v1" || s.Groups[0].Servers != 3 || s.Groups[1].Name != "v2" || s.Groups[1].Role != "canary" {
		t.Fatalf("groups %+v", s.Groups)
	}
	for _, sv := range s.Servers {
		if sv.State != watch.StateUp {
			t.Errorf("%s: %s %s", sv.Name, sv.State, sv.Err)
		}
	}
	if bytes.Contains(append(out.Bytes(), errb.Bytes()...), []byte("hunter2")) {
		t.Error("the kubeconfig's token reached the output")
	}
}
