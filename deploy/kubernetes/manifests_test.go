//go:build manifests

// Package kubernetes holds the manifests that run infertop agents on
// Kubernetes (an Indexed Job, a headless Service, the Secrets) and the
// test that decodes them strictly with the Kubernetes API's own types.
package kubernetes

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
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

// TestManifestsDecodeStrictly: every manifest is a Job, Service or Secret
// the API types read without an unknown field, and a misspelt field
// fails.
func TestManifestsDecodeStrictly(t *testing.T) {
	m := readAll(t)
	if len(m.jobs) != 1 || len(m.services) != 1 || len(m.secrets) != 2 {
		t.Fatalf("%d jobs, %d services, %d secrets", len(m.jobs), len(m.services), len(m.secrets))
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
// the README's guide says: an Indexed Job of n agents each told its index
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
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		if req.IsZero() || lim.IsZero() || lim.Cmp(req) < 0 {
			t.Errorf("%s: request %v, limit %v", r, req.String(), lim.String())
		}
	}
	if mem := c.Resources.Limits[corev1.ResourceMemory]; mem.Cmp(resource.MustParse("512Mi")) < 0 {
		t.Errorf("a memory limit of %v is too little for an agent's histograms", mem.String())
	}
	ps, cs := pod.SecurityContext, c.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser == 0 {
		t.Errorf("pod security context %+v: not non-root", ps)
	}
	if cs == nil || cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem || cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation ||
		cs.Capabilities == nil || !slices.Contains(cs.Capabilities.Drop, "ALL") {
		t.Errorf("container security context %+v", cs)
	}
	secrets := map[string]corev1.Secret{}
	for _, sec := range m.secrets {
		secrets[sec.Name] = sec
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	writable := false
	for _, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			t.Errorf("mount %s of no volume", vm.Name)
			continue
		}
		switch {
		case v.EmptyDir != nil:
			writable = writable || strings.Contains(args, "="+vm.MountPath+"/")
		case v.Secret != nil:
			sec, ok := secrets[v.Secret.SecretName]
			if !ok {
				t.Errorf("volume %s of no secret %s", v.Name, v.Secret.SecretName)
				continue
			}
			if !vm.ReadOnly {
				t.Errorf("secret %s mounted writable", sec.Name)
			}
			for key := range sec.StringData {
				path := vm.MountPath + "/" + key
				if strings.Contains(args, path) {
					continue
				}
				if sec.Type != corev1.SecretTypeTLS {
					t.Errorf("secret %s's %s (%s) is used by no argument", sec.Name, key, path)
				}
			}
		}
	}
	if !writable {
		t.Error("the agent writes nowhere in an emptyDir")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the agents need no API token: automountServiceAccountToken should be false")
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
