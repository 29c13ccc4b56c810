//go:build manifests

// Package rollouts holds the templates that plug `infertop watch` into
// the rollout tools (Argo Rollouts' web and job providers, Flagger's
// webhooks) and the test that decodes them strictly: the Kubernetes
// kinds with k8s.io/api's own types, the rollout tools' kinds with the
// fields of their CRDs that the templates use (a misspelt or misplaced
// field is an error).
package rollouts

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// analysisTemplate is argoproj.io/v1alpha1 AnalysisTemplate's fields the
// templates use (github.com/argoproj/argo-rollouts, pkg/apis/rollouts/v1alpha1).
type analysisTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Args []struct {
			Name  string  `json:"name"`
			Value *string `json:"value,omitempty"`
		} `json:"args"`
		Metrics []struct {
			Name              string `json:"name"`
			Interval          string `json:"interval,omitempty"`
			Count             *int   `json:"count,omitempty"`
			FailureLimit      *int   `json:"failureLimit,omitempty"`
			InconclusiveLimit *int   `json:"inconclusiveLimit,omitempty"`
			SuccessCondition  string `json:"successCondition,omitempty"`
			FailureCondition  string `json:"failureCondition,omitempty"`
			Provider          struct {
				Web *struct {
					URL            string `json:"url"`
					TimeoutSeconds int    `json:"timeoutSeconds,omitempty"`
					JSONPath       string `json:"jsonPath"`
				} `json:"web,omitempty"`
				Job *struct {
					Spec batchv1.JobSpec `json:"spec"`
				} `json:"job,omitempty"`
			} `json:"provider"`
		} `json:"metrics"`
	} `json:"spec"`
}

// canary is flagger.app/v1beta1 Canary's fields the template uses
// (github.com/fluxcd/flagger, pkg/apis/flagger/v1beta1).
type canary struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		TargetRef struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Name       string `json:"name"`
		} `json:"targetRef"`
		Service struct {
			Port int `json:"port"`
		} `json:"service"`
		Analysis struct {
			Interval   string `json:"interval"`
			Threshold  int    `json:"threshold"`
			MaxWeight  int    `json:"maxWeight"`
			StepWeight int    `json:"stepWeight"`
			Webhooks   []struct {
				Name    string `json:"name"`
				Type    string `json:"type"`
				URL     string `json:"url"`
				Timeout string `json:"timeout"`
			} `json:"webhooks"`
		} `json:"analysis"`
	} `json:"spec"`
}

func strict(doc []byte, v any) error {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return err
	}
	strictErrs, err := sigsjson.UnmarshalStrict(j, v)
	if err != nil {
		return err
	}
	if len(strictErrs) > 0 {
		return strictErrs[0]
	}
	return nil
}

// TestTemplates decodes every document strictly and checks what joins
// them: the web provider reads /verdict's state, the job runs a headless
// watch, Flagger's webhook calls /verdict, and the watch's Service
// serves the port the templates call.
func TestTemplates(t *testing.T) {
	files, _ := filepath.Glob("*.yaml")
	if len(files) < 4 {
		t.Fatalf("templates: %v", files)
	}
	var web, job, hook, deploy bool
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(b, []byte("\n---\n")) {
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			switch tm.APIVersion + " " + tm.Kind {
			case "argoproj.io/v1alpha1 AnalysisTemplate":
				var a analysisTemplate
				if err := strict(doc, &a); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				for _, m := range a.Spec.Metrics {
					if w := m.Provider.Web; w != nil {
						web = strings.HasSuffix(w.URL, "/verdict") && w.JSONPath == "{$.state}" && strings.Contains(m.FailureCondition, `"regressed"`)
					}
					if j := m.Provider.Job; j != nil {
						args := j.Spec.Template.Spec.Containers[0].Args
						job = len(args) > 1 && args[0] == "watch" && args[1] == "--headless" && j.Spec.Template.Spec.ServiceAccountName == "infertop-watch"
					}
				}
			case "flagger.app/v1beta1 Canary":
				var c canary
				if err := strict(doc, &c); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				hook = len(c.Spec.Analysis.Webhooks) == 1 && strings.HasSuffix(c.Spec.Analysis.Webhooks[0].URL, ":9400/verdict")
			case "apps/v1 Deployment":
				var d appsv1.Deployment
				if err := strict(doc, &d); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				deploy = d.Spec.Template.Spec.Containers[0].Args[0] == "watch" && d.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort == 9400
			case "v1 Service":
				var s corev1.Service
				if err := strict(doc, &s); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
			default:
				t.Fatalf("%s: a kind this test does not know: %s", f, tm.Kind)
			}
		}
	}
	if !web || !job || !hook || !deploy {
		t.Fatalf("web provider %v, job provider %v, Flagger webhook %v, watch deployment %v: want all", web, job, hook, deploy)
	}
}
