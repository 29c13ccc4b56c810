//go:build manifests

// Package kubernetes holds the manifests that run infertop agents on
// Kubernetes (an Indexed Job, a headless Service, the Secrets, a pod of
// infertop ssh --agents), the access infertop watch needs (a
// ServiceAccount, a Role, a RoleBinding) and the test that decodes them strictly with the
// Kubernetes API's own types.
package kubernetes

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// manifests are every document of every YAML file here, by kind.
type manifests struct {
	jobs     []batchv1.Job
	services []corev1.Service
	secrets  []corev1.Secret
	pods     []corev1.Pod
	accounts []corev1.ServiceAccount
	roles    []rbacv1.Role
	bindings []rbacv1.RoleBinding
}

// decodeStrict decodes one document into the API type of its kind; a
// field the type does not have (a misspelling, a letter in another case)
// or a duplicated one is an error, as kubectl apply --validate=strict
// makes it.
func decodeStrict(doc []byte, m *manifests) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	switch tm.APIVersion + " " + tm.Kind {
	case "batch/v1 Job":
		var j batchv1.Job
		if err := unmarshalStrict(doc, &j); err != nil {
			return err
		}
		m.jobs = append(m.jobs, j)
	case "v1 Service":
		var s corev1.Service
		if err := unmarshalStrict(doc, &s); err != nil {
			return err
		}
		m.services = append(m.services, s)
	case "v1 Secret":
		var s corev1.Secret
		if err := unmarshalStrict(doc, &s); err != nil {
			return err
		}
		m.secrets = append(m.secrets, s)
	case "v1 Pod":
		var p corev1.Pod
		if err := unmarshalStrict(doc, &p); err != nil {
			return err
		}
		m.pods = append(m.pods, p)
	case "v1 ServiceAccount":
		var a corev1.ServiceAccount
		if err := unmarshalStrict(doc, &a); err != nil {
			return err
		}
		m.accounts = append(m.accounts, a)
	case "rbac.authorization.k8s.io/v1 Role":
		var r rbacv1.Role
		if err := unmarshalStrict(doc, &r); err != nil {
			return err
		}
		m.roles = append(m.roles, r)
	case "rbac.authorization.k8s.io/v1 RoleBinding":
		var b rbacv1.RoleBinding
		if err := unmarshalStrict(doc, &b); err != nil {
			return err
		}
		m.bindings = append(m.bindings, b)
	default:
		return &unknownKind{tm.APIVersion, tm.Kind}
	}
	return nil
}

type unknownKind struct{ apiVersion, kind string }

func (u *unknownKind) Error() string { return "no test knows " + u.apiVersion + " " + u.kind }

// documents splits a YAML stream at its document markers.
func documents(b []byte) [][]byte {
	var out [][]byte
	for _, d := range bytes.Split(append([]byte("\n"), b...), []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			out = append(out, d)
		}
	}
	return out
}

func stripComments(b []byte) []byte {
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			keep = append(keep, l)
		}
	}
	return []byte(strings.Join(keep, "\n"))
}

func readAll(t *testing.T) manifests {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	var m manifests
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range documents(b) {
			if err := decodeStrict(d, &m); err != nil {
				t.Fatalf("%s, document %d: %v", f, i+1, err)
			}
		}
	}
	return m
}

// TestManifestsDecodeStrictly: every manifest is a Job, Service, Secret
// or Pod the API types read without an unknown field, and a misspelt
// field fails.
func TestManifestsDecodeStrictly(t *testing.T) {
	m := readAll(t)
	if len(m.jobs) != 1 || len(m.services) != 1 || len(m.secrets) != 3 || len(m.pods) != 1 || len(m.accounts) != 1 || len(m.roles) != 1 || len(m.bindings) != 1 {
		t.Fatalf("%d jobs, %d services, %d secrets, %d pods, %d service accounts, %d roles, %d role bindings",
			len(m.jobs), len(m.services), len(m.secrets), len(m.pods), len(m.accounts), len(m.roles), len(m.bindings))
	}
	job, err := os.ReadFile("job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, typo := range []struct{ from, to string }{
		{"  parallelism: 4", "  parallelizm: 4"},
		{"readOnlyRootFilesystem: true", "readOnlyRootFileSystem: true"},
		{"  completionMode: Indexed", "  completionMode: Indexed\n  completionMode: NonIndexed"},
	} {
		bad := strings.Replace(string(job), typo.from, typo.to, 1)
		if bad == string(job) {
			t.Fatalf("%q is not in job.yaml", typo.from)
		}
		if err := decodeStrict([]byte(bad), &manifests{}); err == nil {
			t.Errorf("job.yaml with %q decoded", typo.to)
		}
	}
}

// TestAgentsJob: the Job, the Service and the Secrets fit together as
// docs/guide/fleet.md says: an Indexed Job of n agents each told its index
// of n, found through a headless Service's named port listing pods not yet
// ready, its token and headers from a Secret's files, resources bounded,
// non-root on a read-only root with an emptyDir to write in.
func TestAgentsJob(t *testing.T) {
	m := readAll(t)
	job, svc := m.jobs[0], m.services[0]
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || s.Parallelism == nil || s.Completions == nil || *s.Parallelism != *s.Completions {
		t.Fatalf("not an Indexed Job of parallelism = completions: %+v", s)
	}
	n := *s.Parallelism
	pod := s.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever || pod.Subdomain != svc.Name {
		t.Errorf("restart policy %q, subdomain %q (the service is %q)", pod.RestartPolicy, pod.Subdomain, svc.Name)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name == "" {
		t.Errorf("not a headless service with a named port listing every pod: %+v", svc.Spec)
	}
	for k, v := range svc.Spec.Selector {
		if s.Template.Labels[k] != v {
			t.Errorf("the service selects %s=%s, the pods are %v", k, v, s.Template.Labels)
		}
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"agent ", "--index=$(JOB_COMPLETION_INDEX)", "--of=" + itoa(n), "--start-at=$(START_AT)", "--token-file=/etc/infertop/secret/token", "-H @/etc/infertop/secret/headers", "--tls-cert="} {
		if !strings.Contains(args, want) {
			t.Errorf("the agent's arguments %q lack %q", args, want)
		}
	}
	var envs []string
	for _, e := range c.Env {
		envs = append(envs, e.Name)
		if e.Name == "JOB_COMPLETION_INDEX" && (e.ValueFrom == nil || e.ValueFrom.FieldRef == nil ||
			e.ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']") {
			t.Errorf("JOB_COMPLETION_INDEX from %+v", e.ValueFrom)
		}
	}
	if !slices.Contains(envs, "JOB_COMPLETION_INDEX") || !slices.Contains(envs, "START_AT") {
		t.Errorf("env %v", envs)
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != svc.Spec.Ports[0].TargetPort.String() || c.Ports[0].ContainerPort != svc.Spec.Ports[0].Port {
		t.Errorf("container ports %+v, service ports %+v", c.Ports, svc.Spec.Ports)
	}
	if mem := c.Resources.Limits[corev1.ResourceMemory]; mem.Cmp(resource.MustParse("512Mi")) < 0 {
		t.Errorf("a memory limit of %v is too little for an agent's histograms", mem.String())
	}
	checkPod(t, "the agents", pod, args, m.secrets)
}

// checkPod holds a pod of ours to the rules every one keeps: resources
// bounded, non-root on a read-only root, every capability dropped, no
// API token, secrets mounted read-only and every key it gets read by an
// argument (args, the container's joined), an emptyDir written in.
func checkPod(t *testing.T, what string, pod corev1.PodSpec, args string, secrets []corev1.Secret) {
	t.Helper()
	c := pod.Containers[0]
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		if req.IsZero() || lim.IsZero() || lim.Cmp(req) < 0 {
			t.Errorf("%s: %s: request %v, limit %v", what, r, req.String(), lim.String())
		}
	}
	ps, cs := pod.SecurityContext, c.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser == 0 {
		t.Errorf("%s: pod security context %+v: not non-root", what, ps)
	}
	if cs == nil || cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem || cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation ||
		cs.Capabilities == nil || !slices.Contains(cs.Capabilities.Drop, "ALL") {
		t.Errorf("%s: container security context %+v", what, cs)
	}
	byName := map[string]corev1.Secret{}
	for _, sec := range secrets {
		byName[sec.Name] = sec
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	writable := false
	for _, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			t.Errorf("%s: mount %s of no volume", what, vm.Name)
			continue
		}
		switch {
		case v.EmptyDir != nil:
			writable = writable || strings.Contains(args, "="+vm.MountPath+"/")
		case v.Secret != nil:
			sec, ok := byName[v.Secret.SecretName]
			if !ok {
				t.Errorf("%s: volume %s of no secret %s", what, v.Name, v.Secret.SecretName)
				continue
			}
			if !vm.ReadOnly {
				t.Errorf("%s: secret %s mounted writable", what, sec.Name)
			}
			paths := map[string]string{}
			for key := range sec.StringData {
				paths[key] = key
			}
			if len(v.Secret.Items) > 0 { // only these, under their paths
				paths = map[string]string{}
				for _, it := range v.Secret.Items {
					if _, ok := sec.StringData[it.Key]; !ok {
						t.Errorf("%s: volume %s projects %s, which secret %s lacks", what, v.Name, it.Key, sec.Name)
					}
					paths[it.Key] = it.Path
				}
			}
			for key, rel := range paths {
				path := vm.MountPath + "/" + rel
				if strings.Contains(args, path) {
					continue
				}
				if sec.Type != corev1.SecretTypeTLS {
					t.Errorf("%s: secret %s's %s (%s) is used by no argument", what, sec.Name, key, path)
				}
			}
		}
	}
	if !writable {
		t.Errorf("%s write nowhere in an emptyDir", what)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("%s need no API token: automountServiceAccountToken should be false", what)
	}
}

// TestSSHPod: the ssh pod follows every agent the Service lists, through
// its DNS name in the pod's own namespace at the Service's port, with the
// token the agents share and the CA of their certificate, and serves on
// its named port; it gets the token alone of the agents' Secret.
func TestSSHPod(t *testing.T) {
	m := readAll(t)
	pod, svc := m.pods[0], m.services[0]
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	agents := "--agents=" + svc.Name + ".$(POD_NAMESPACE).svc:" + itoa(svc.Spec.Ports[0].Port)
	for _, want := range []string{"ssh ", agents, "--agents-token-file=/etc/infertop/secret/token", "--agents-cacert=/etc/infertop/tls/ca.crt",
		"--authorized-keys=/etc/infertop/ssh/authorized_keys", "--listen=:" + itoa(c.Ports[0].ContainerPort)} {
		if !strings.Contains(args, want) {
			t.Errorf("the ssh pod's arguments %q lack %q", args, want)
		}
	}
	if len(c.Env) != 1 || c.Env[0].Name != "POD_NAMESPACE" || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.FieldRef == nil ||
		c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("env %+v: POD_NAMESPACE from metadata.namespace", c.Env)
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "ssh" {
		t.Errorf("ports %+v", c.Ports)
	}
	checkPod(t, "the ssh pod", pod.Spec, args, m.secrets)
}

// TestWatchRBAC: the watch's ServiceAccount is bound to its Role in its
// own namespace, and the Role grants reading pods and EndpointSlices
// (what discover/kube lists, held there by its own test of this file)
// and nothing else: no write, no Secret, no other resource.
func TestWatchRBAC(t *testing.T) {
	m := readAll(t)
	sa, role, rb := m.accounts[0], m.roles[0], m.bindings[0]
	if rb.RoleRef.APIGroup != rbacv1.GroupName || rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != role.Name {
		t.Errorf("the binding refers to %+v, the role is %s", rb.RoleRef, role.Name)
	}
	if len(rb.Subjects) != 1 || rb.Subjects[0].Kind != rbacv1.ServiceAccountKind || rb.Subjects[0].Name != sa.Name || rb.Subjects[0].Namespace != "" {
		t.Errorf("the binding's subjects %+v: want the ServiceAccount %s of its own namespace", rb.Subjects, sa.Name)
	}
	granted := map[string]bool{}
	for _, r := range role.Rules {
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("rule %+v: names or URLs", r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					granted[g+"/"+res+" "+v] = true
				}
			}
		}
	}
	want := map[string]bool{}
	for _, res := range []string{"/pods", "discovery.k8s.io/endpointslices"} {
		for _, v := range []string{"get", "list", "watch"} {
			want[res+" "+v] = true
		}
	}
	for g := range granted {
		if !want[g] {
			t.Errorf("the role grants %s, which the watch does not need", g)
		}
	}
	for w := range want {
		if !granted[w] {
			t.Errorf("the role does not grant %s", w)
		}
	}
}

// TestImageNamed: every manifest runs the image make image builds (the
// Makefile's IMAGE), as the user it runs as (tools/image: 65532).
func TestImageNamed(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	im := regexp.MustCompile(`(?m)^IMAGE \?= (\S+)$`).FindSubmatch(mk)
	if im == nil {
		t.Fatal("the Makefile sets no IMAGE ?=")
	}
	m := readAll(t)
	pods := map[string]corev1.PodSpec{"job " + m.jobs[0].Name: m.jobs[0].Spec.Template.Spec}
	for _, p := range m.pods {
		pods["pod "+p.Name] = p.Spec
	}
	for what, p := range pods {
		for _, c := range p.Containers {
			if c.Image != string(im[1]) {
				t.Errorf("%s runs %s, make image builds %s", what, c.Image, im[1])
			}
		}
		if sc := p.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 65532 || sc.RunAsGroup == nil || *sc.RunAsGroup != 65532 {
			t.Errorf("%s: not the image's user 65532:65532: %+v", what, sc)
		}
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// unmarshalStrict decodes a YAML document into v as the API server reads
// it strictly: a duplicated key, an unknown field or a field in another
// case (encoding/json would match readOnlyRootFileSystem) is an error.
func unmarshalStrict(doc []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := sigsjson.UnmarshalStrict(j, v, sigsjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}
