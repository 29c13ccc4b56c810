package kube

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/infertop/infertop/readlimit/limittest"
)

// apiServer serves pods and EndpointSlices as the API server does: by
// namespace, filtered by a label selector, in pages of the limit asked
// for with a continue token.
type apiServer struct {
	mu     sync.Mutex
	pods   []tPod
	slices []tSlice
	auth   []string // the Authorization headers seen
	asked  []string // the requests: method and path
	// hook, when set, answers instead.
	hook func(w http.ResponseWriter, r *http.Request) bool
}

func (a *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.auth = append(a.auth, r.Header.Get("Authorization"))
	a.asked = append(a.asked, r.Method+" "+r.URL.Path)
	if a.hook != nil && a.hook(w, r) {
		return
	}
	sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var items []any
	switch {
	case strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/ns/pods"):
		for _, p := range a.pods {
			if sel.Matches(labels.Set(p.Metadata.Labels)) {
				items = append(items, p)
			}
		}
	case strings.HasPrefix(r.URL.Path, "/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices"):
		for _, s := range a.slices {
			if sel.Matches(labels.Set(s.Metadata.Labels)) {
				items = append(items, s)
			}
		}
	default:
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(tStatus{Kind: "Status", APIVersion: "v1", Status: "Failure", Reason: "NotFound", Code: 404})
		return
	}
	from, _ := strconv.Atoi(r.URL.Query().Get("continue"))
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	items = items[min(from, len(items)):]
	next := ""
	if limit > 0 && len(items) > limit {
		items, next = items[:limit], strconv.Itoa(from+limit)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "List", "apiVersion": "v1", "metadata": map[string]string{"continue": next}, "items": items})
}

func (a *apiServer) set(f func(a *apiServer)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(a)
}

// The API's objects as this test sends them: the fields a Source reads,
// under the API's JSON names (testdata/ holds objects written by
// k8s.io/api's own types, read in TestAPITypes).
type (
	tMeta struct {
		Name              string            `json:"name"`
		Namespace         string            `json:"namespace,omitempty"`
		Labels            map[string]string `json:"labels,omitempty"`
		DeletionTimestamp string            `json:"deletionTimestamp,omitempty"`
	}
	tPort struct {
		Name          string `json:"name,omitempty"`
		ContainerPort int    `json:"containerPort"`
	}
	tContainer struct {
		Name  string  `json:"name"`
		Ports []tPort `json:"ports,omitempty"`
	}
	tCondition struct {
		Type   string `json:"type"`
		Status string `json:"status"`
	}
	tPod struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
		Metadata   tMeta  `json:"metadata"`
		Spec       struct {
			Containers []tContainer `json:"containers"`
		} `json:"spec"`
		Status struct {
			Phase      string       `json:"phase"`
			PodIP      string       `json:"podIP,omitempty"`
			Conditions []tCondition `json:"conditions,omitempty"`
		} `json:"status"`
	}
	tRef struct {
		Kind      string `json:"kind"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	}
	tEndpoint struct {
		Addresses  []string `json:"addresses"`
		Conditions struct {
			Ready *bool `json:"ready,omitempty"`
		} `json:"conditions"`
		TargetRef *tRef `json:"targetRef,omitempty"`
	}
	tSlicePort struct {
		Name *string `json:"name,omitempty"`
		Port *int32  `json:"port,omitempty"`
	}
	tSlice struct {
		Metadata    tMeta        `json:"metadata"`
		AddressType string       `json:"addressType"`
		Endpoints   []tEndpoint  `json:"endpoints"`
		Ports       []tSlicePort `json:"ports"`
	}
	tStatus struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
		Status     string `json:"status"`
		Message    string `json:"message,omitempty"`
		Reason     string `json:"reason,omitempty"`
		Code       int    `json:"code"`
	}
)

// mkPod is a running pod of app vllm at ip, its label version (none when
// ""), ready or not, with a container port called metrics at 8000.
func mkPod(name, ip, version string, ready bool) tPod {
	l := map[string]string{"app": "vllm"}
	if version != "" {
		l["version"] = version
	}
	st := "False"
	if ready {
		st = "True"
	}
	p := tPod{Kind: "Pod", APIVersion: "v1", Metadata: tMeta{Name: name, Namespace: "ns", Labels: l}}
	p.Spec.Containers = []tContainer{{Name: "vllm", Ports: []tPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 8000}}}}
	p.Status.Phase, p.Status.PodIP = "Running", ip
	p.Status.Conditions = []tCondition{{Type: "Ready", Status: st}}
	return p
}

func start(t *testing.T, a *apiServer, cfg Config) *Source {
	t.Helper()
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	s, err := NewForConfig(&rest.Config{Host: srv.URL, BearerToken: "sekrit-token-123"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func list(t *testing.T, s *Source) ([]Target, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.List(ctx)
}

func show(ts []Target) string {
	var out []string
	for _, t := range ts {
		out = append(out, fmt.Sprintf("%s %s %s %v", t.Name, t.Addr, t.Group, t.Ready))
	}
	return strings.Join(out, "; ")
}

// TestPodsGrouped: the pods of two revisions found at their named
// metrics port and grouped by their label; a pod of another app and a
// pending one with no address are no target; one not ready is kept as
// such; one without the label has no group; a pod leaving is gone at the
// next listing, and a new one is there.
func TestPodsGrouped(t *testing.T) {
	pending := mkPod("vllm-p", "", "v2", false)
	pending.Status.Phase = "Pending"
	other := mkPod("redis-0", "10.0.0.9", "v1", true)
	other.Metadata.Labels["app"] = "redis"
	a := &apiServer{pods: []tPod{
		mkPod("vllm-a", "10.0.0.1", "v1", true), mkPod("vllm-b", "10.0.0.2", "v1", true),
		mkPod("vllm-c", "10.0.0.3", "v2", true), mkPod("vllm-d", "10.0.0.4", "v2", false),
		mkPod("vllm-e", "10.0.0.5", "", true), pending, other,
	}}
	s := start(t, a, Config{Namespace: "ns", Selector: "app=vllm", Port: "metrics", By: "version"})
	ts, err := list(t, s)
	want := "vllm-a 10.0.0.1:8000 v1 true; vllm-b 10.0.0.2:8000 v1 true; vllm-c 10.0.0.3:8000 v2 true; vllm-d 10.0.0.4:8000 v2 false; vllm-e 10.0.0.5:8000  true"
	if err != nil || show(ts) != want {
		t.Fatalf("%v\ngot  %s\nwant %s", err, show(ts), want)
	}
	a.set(func(a *apiServer) {
		a.pods = append(a.pods[1:], mkPod("vllm-f", "10.0.0.6", "v2", true))
		for i := range a.pods {
			if a.pods[i].Metadata.Name == "vllm-b" {
				a.pods[i].Metadata.DeletionTimestamp = "2026-12-03T12:00:00Z" // terminating: still listed, no longer ready
			}
		}
	})
	ts, err = list(t, s)
	want = "vllm-b 10.0.0.2:8000 v1 false; vllm-c 10.0.0.3:8000 v2 true; vllm-d 10.0.0.4:8000 v2 false; vllm-e 10.0.0.5:8000  true; vllm-f 10.0.0.6:8000 v2 true"
	if err != nil || show(ts) != want {
		t.Fatalf("%v\ngot  %s\nwant %s", err, show(ts), want)
	}
	for _, h := range a.auth {
		if h != "Bearer sekrit-token-123" {
			t.Fatalf("Authorization %q", h)
		}
	}
}

// TestFollow: the listing is made again, so a pod that comes is found,
// and it stops when found says so.
func TestFollow(t *testing.T) {
	a := &apiServer{pods: []tPod{mkPod("vllm-a", "10.0.0.1", "v1", true)}}
	s := start(t, a, Config{Namespace: "ns", Selector: "app=vllm", Port: "8000", By: "version"})
	var seen []int
	s.Follow(context.Background(), time.Millisecond, 10*time.Second, func(ts []Target, err error) bool {
		if err != nil {
			t.Error(err)
		}
		seen = append(seen, len(ts))
		a.set(func(a *apiServer) {
			a.pods = append(a.pods, mkPod(fmt.Sprint("vllm-", len(ts)), fmt.Sprint("10.0.1.", len(ts)), "v2", true))
		})
		return len(seen) < 3
	})
	if fmt.Sprint(seen) != "[1 2 3]" {
		t.Errorf("listings of %v targets", seen)
	}
}

// TestNoPort: a pod without the named port is left out and named, the
// others kept; a numbered port needs no name.
func TestNoPort(t *testing.T) {
	bare := mkPod("vllm-bare", "10.0.0.2", "v1", true)
	bare.Spec.Containers[0].Ports = nil
	a := &apiServer{pods: []tPod{mkPod("vllm-a", "10.0.0.1", "v1", true), bare}}
	ts, err := list(t, start(t, a, Config{Namespace: "ns", Selector: "app=vllm", Port: "metrics", By: "version"}))
	if len(ts) != 1 || err == nil || err.Error() != `kube: 1 pod without the port "metrics": vllm-bare` {
		t.Errorf("%s: %v", show(ts), err)
	}
	ts, err = list(t, start(t, a, Config{Namespace: "ns", Selector: "app=vllm", Port: "9090"}))
	if err != nil || show(ts) != "vllm-a 10.0.0.1:9090  true; vllm-bare 10.0.0.2:9090  true" {
		t.Errorf("%s: %v", show(ts), err)
	}
}

// TestService: with a Service, the endpoints of its EndpointSlices at
// its named port, ready as the slice says, each once, grouped by their
// pods' labels; endpoints of pods the selector did not pick, and slices
// of other Services, are not targets.
func TestService(t *testing.T) {
	port, name, no := int32(8000), "metrics", false
	ep := func(pod, ip string, ready *bool) tEndpoint {
		e := tEndpoint{Addresses: []string{ip}, TargetRef: &tRef{Kind: "Pod", Name: pod, Namespace: "ns"}}
		e.Conditions.Ready = ready
		return e
	}
	slice := func(svc string, eps ...tEndpoint) tSlice {
		return tSlice{Metadata: tMeta{Name: svc + "-x", Labels: map[string]string{serviceNameLabel: svc}},
			AddressType: "IPv4", Endpoints: eps, Ports: []tSlicePort{{Name: &name, Port: &port}}}
	}
	a := &apiServer{
		pods: []tPod{mkPod("vllm-a", "10.0.0.1", "stable", true), mkPod("vllm-b", "10.0.0.2", "canary", true), mkPod("vllm-c", "10.0.0.3", "canary", false)},
		slices: []tSlice{
			slice("vllm", ep("vllm-a", "10.0.0.1", nil), ep("vllm-b", "10.0.0.2", nil), ep("gone", "10.0.0.7", nil)),
			slice("vllm", ep("vllm-c", "10.0.0.3", &no), ep("vllm-b", "10.0.0.2", nil)),
			slice("other", ep("vllm-a", "10.0.9.1", nil)),
		},
	}
	ts, err := list(t, start(t, a, Config{Namespace: "ns", Selector: "app=vllm", Service: "vllm", Port: "metrics", By: "version"}))
	want := "vllm-a 10.0.0.1:8000 stable true; vllm-b 10.0.0.2:8000 canary true; vllm-c 10.0.0.3:8000 canary false"
	if err != nil || show(ts) != want {
		t.Errorf("%v\ngot  %s\nwant %s", err, show(ts), want)
	}
	// Without a selector, every pod of the Service; a name the Service lacks.
	ts, err = list(t, start(t, a, Config{Namespace: "ns", Service: "vllm", Port: "grpc"}))
	if len(ts) != 0 || err == nil || !strings.Contains(err.Error(), `3 pods without the port "grpc"`) {
		t.Errorf("%s: %v", show(ts), err)
	}
}

// TestPages: a namespace of more pods than a page is listed whole,
// page by page.
func TestPages(t *testing.T) {
	a := &apiServer{}
	for i := range 2*pageSize + 7 {
		a.pods = append(a.pods, mkPod(fmt.Sprintf("vllm-%03d", i), fmt.Sprintf("10.0.%d.%d", i/200, i%200), []string{"v1", "v2"}[i%2], true))
	}
	ts, err := list(t, start(t, a, Config{Namespace: "ns", Selector: "app=vllm", Port: "metrics", By: "version"}))
	if err != nil || len(ts) != 2*pageSize+7 || len(a.auth) != 3 {
		t.Errorf("%d targets in %d requests: %v", len(ts), len(a.auth), err)
	}
}

// TestConfigErrors: a Config the API would refuse is a one-line error
// naming the field.
func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Port: "8000"}, "a selector"},
		{Config{Selector: "app in (", Port: "8000"}, "selector"},
		{Config{Selector: "app=vllm", Port: "0"}, "port 0"},
		{Config{Selector: "app=vllm", Port: "no such port name"}, "port"},
		{Config{Selector: "app=vllm", Port: "8000", By: "bad label!"}, "label"},
		{Config{Selector: "app=vllm", Port: "8000", Namespace: "Bad_NS"}, "namespace"},
		{Config{Service: "Bad.svc", Port: "8000"}, "Service"},
	} {
		_, err := NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"}, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v", c.cfg, err)
		}
	}
}

// TestHostileAPI: what a broken or hostile API server sends is bounded
// in memory and an error of one line: a 100 MB body, a million empty
// objects in a small one, garbage, a page that never ends, a refusal,
// a redirect elsewhere (never followed with the token).
func TestHostileAPI(t *testing.T) {
	elsewhere := &apiServer{}
	other := httptest.NewServer(elsewhere)
	defer other.Close()
	cases := []struct {
		name string
		hook func(w http.ResponseWriter, r *http.Request)
		want string
	}{
		{"100 MB", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"items":[{"metadata":{"name":"`))
			chunk := []byte(strings.Repeat("x", 1<<20))
			for range 100 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, "larger than"},
		{"a million objects", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"items":[{}` + strings.Repeat(`,{}`, 1e6) + `]}`))
		}, "more values"},
		{"garbage", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("\x1b[31m{not json\n\x07"))
		}, "not a list"},
		{"endless pages", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"metadata":{"continue":"more"},"items":[]}`))
		}, "the first"},
		{"forbidden", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(tStatus{Kind: "Status", APIVersion: "v1", Status: "Failure",
				Message: "pods is forbidden: User \"system:serviceaccount:ns:default\" cannot list resource \"pods\"\n\x1b[2J", Reason: "Forbidden", Code: 403})
		}, "forbidden"},
		{"redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
		}, "redirected"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := &apiServer{hook: func(w http.ResponseWriter, r *http.Request) bool { c.hook(w, r); return true }}
			s := start(t, a, Config{Namespace: "ns", Selector: "app=vllm", Port: "metrics"})
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			ts, err := list(t, s)
			runtime.ReadMemStats(&m1)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.ContainsAny(err.Error(), "\n\x1b\x07") || strings.Contains(err.Error(), "sekrit") {
				t.Errorf("%d targets, error %q", len(ts), err)
			}
			if grew := int64(m1.TotalAlloc-m0.TotalAlloc) >> 20; grew > 150 {
				t.Errorf("%d MB allocated", grew)
			}
			if c.name == "forbidden" && !apierrors.IsForbidden(err) {
				t.Errorf("not forbidden to apierrors: %v", err)
			}
		})
	}
	if len(elsewhere.auth) != 0 {
		t.Errorf("the redirect was followed: %q", elsewhere.auth)
	}
}

// TestConnect: a kubeconfig's cluster, credentials and namespace are
// used; a kubeconfig too large or absent is refused by name.
func TestConnect(t *testing.T) {
	a := &apiServer{pods: []tPod{mkPod("vllm-a", "10.0.0.1", "v1", true)}}
	srv := httptest.NewTLSServer(a) // a kubeconfig's credentials go over TLS only
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	dir := t.TempDir()
	kc := filepath.Join(dir, "config")
	doc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, certificate-authority-data: %s}}]
users: [{name: u, user: {token: kubeconfig-token-456}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: ns}}]
current-context: x
`, srv.URL, base64.StdEncoding.EncodeToString(ca))
	if err := os.WriteFile(kc, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Connect(Config{Selector: "app=vllm", Port: "metrics"}, kc)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := list(t, s)
	if err != nil || len(ts) != 1 || s.Namespace() != "ns" || a.auth[0] != "Bearer kubeconfig-token-456" {
		t.Errorf("%s in %s: %v (%q)", show(ts), s.Namespace(), err, a.auth)
	}
	if _, err := Connect(Config{Selector: "app=vllm", Port: "metrics"}, filepath.Join(dir, "none")); err == nil || !strings.Contains(err.Error(), "kubeconfig") {
		t.Errorf("a missing kubeconfig: %v", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 5<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Connect(Config{Selector: "app=vllm", Port: "metrics"}, big); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Errorf("a 5 MB kubeconfig: %v", err)
	}
	t.Setenv("KUBECONFIG", filepath.Join(dir, "none"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := Connect(Config{Selector: "app=vllm", Port: "metrics"}, ""); err == nil || !strings.Contains(err.Error(), "not in a pod") {
		t.Errorf("no kubeconfig, no cluster: %v", err)
	}
}

// TestRBAC: every request a Source makes, with a Service and without,
// is one deploy/kubernetes/watch-rbac.yaml's Role grants.
func TestRBAC(t *testing.T) {
	doc, err := os.ReadFile("../../deploy/kubernetes/watch-rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	granted := map[string]bool{}
	for _, d := range strings.Split(string(doc), "\n---") {
		var role struct {
			Kind  string
			Rules []struct{ APIGroups, Resources, Verbs []string }
		}
		if err := yaml.Unmarshal([]byte(d), &role); err != nil {
			t.Fatal(err)
		}
		for _, r := range role.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						granted[g+"/"+res+" "+v] = role.Kind == "Role"
					}
				}
			}
		}
	}
	a := &apiServer{pods: []tPod{mkPod("vllm-a", "10.0.0.1", "v1", true)}}
	for _, cfg := range []Config{{Namespace: "ns", Selector: "app=vllm", Port: "8000"}, {Namespace: "ns", Service: "vllm", Port: "8000"}} {
		if _, err := list(t, start(t, a, cfg)); err != nil {
			t.Fatal(err)
		}
	}
	paths := regexp.MustCompile(`^GET /apis?/(?:([a-z0-9.]+)/)?v1/namespaces/ns/([a-z]+)$`)
	for _, req := range a.asked {
		m := paths.FindStringSubmatch(req)
		if m == nil {
			t.Errorf("%s: not a list of a namespace's resource", req)
			continue
		}
		if !granted[m[1]+"/"+m[2]+" list"] {
			t.Errorf("%s: the Role does not grant list on %s/%s", req, m[1], m[2])
		}
	}
	if len(a.asked) != 3 {
		t.Errorf("requests %v", a.asked)
	}
}

// TestAPITypes: lists written by k8s.io/api's own types (testdata/:
// pods with managed fields, a Deployment's or Argo Rollout's hash label,
// one not ready, one terminating; an EndpointSlice with a nil ready
// condition) read as the API server sends them.
func TestAPITypes(t *testing.T) {
	pods, err := os.ReadFile("testdata/pods.json")
	if err != nil {
		t.Fatal(err)
	}
	slices, err := os.ReadFile("testdata/endpointslices.json")
	if err != nil {
		t.Fatal(err)
	}
	a := &apiServer{hook: func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/pods") {
			_, _ = w.Write(pods)
		} else {
			_, _ = w.Write(slices)
		}
		return true
	}}
	cfg := Config{Namespace: "ns", Selector: "app=vllm", Port: "metrics", By: "rollouts-pod-template-hash"}
	ts, err := list(t, start(t, a, cfg))
	want := "vllm-6d4f-a 10.1.0.1:8001 6d4f true; vllm-6d4f-c 10.1.0.3:8001 6d4f false; vllm-7c9b-b 10.1.0.2:8001 7c9b false"
	if err != nil || show(ts) != want {
		t.Errorf("pods: %v\ngot  %s\nwant %s", err, show(ts), want)
	}
	cfg.Service = "vllm"
	ts, err = list(t, start(t, a, cfg))
	want = "vllm-6d4f-a 10.1.0.1:8001 6d4f true; vllm-6d4f-c 10.1.0.3:8001 6d4f true; vllm-7c9b-b 10.1.0.2:8001 7c9b false"
	if err != nil || show(ts) != want {
		t.Errorf("endpoint slices: %v\ngot  %s\nwant %s", err, show(ts), want)
	}
}

// TestNotAllowedLeftOut: pods whose name, address or group label
// Kubernetes would not allow are left out and counted, the honest pod
// beside them kept; over the pages of a listing they cost a page at a
// time (a 7 MB label a page held 2.2 GB).
func TestNotAllowedLeftOut(t *testing.T) {
	long := strings.Repeat("v", 2<<20)
	var n atomic.Int64
	a := &apiServer{hook: func(w http.ResponseWriter, r *http.Request) bool {
		k := n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		honest := ""
		if k == 1 {
			honest = `{"metadata":{"name":"honest","labels":{"app":"vllm","version":"v1"}},"status":{"podIP":"10.0.0.2","phase":"Running"}},`
		}
		cont := fmt.Sprint("more", k)
		if k == 40 {
			cont = ""
		}
		fmt.Fprintf(w, `{"metadata":{"continue":%q},"items":[%s{"metadata":{"name":"p%d","labels":{"app":"vllm","version":"%s"}},"status":{"podIP":"10.0.0.1","phase":"Running"}},`+
			`{"metadata":{"name":"q%d","labels":{"app":"vllm","version":"v1"}},"status":{"podIP":"%s","phase":"Running"}}]}`, cont, honest, k, long, k, long)
		return true
	}}
	s := start(t, a, Config{Namespace: "ns", Selector: "app=vllm", Port: "8000", By: "version"})
	var ts []Target
	var err error
	peak, _ := limittest.HeapPeak(func() { ts, err = list(t, s) })
	t.Logf("%d targets, %v; heap peak %d MB", len(ts), err, peak>>20)
	if len(ts) != 1 || ts[0].Name != "honest" || err == nil || !strings.Contains(err.Error(), "80 pods with a name, an address or a --by label") {
		t.Errorf("targets %s, error %v; want the honest pod, 80 left out", show(ts), err)
	}
	if peak > 64<<20 {
		t.Errorf("heap peak %d MB", peak>>20)
	}
}
