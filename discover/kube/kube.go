// Package kube finds a fleet's servers in Kubernetes: the pods a label
// selector picks in a namespace, or the endpoints of a Service's
// EndpointSlices, each a target at its metrics port, grouped by one of
// its pod's labels (version, pod-template-hash, Argo Rollouts'
// rollouts-pod-template-hash). It lists them again and again, in pages
// and to a bound, so pods that come and go are followed. client-go lives
// here alone: nothing else of infertop links it.
package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/infertop/infertop/discover"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sanitize"
)

// MaxTargets bounds the pods and endpoints one listing keeps: a
// namespace of more is cut there and said so.
const MaxTargets = discover.MaxAddresses

// pageSize is the most objects asked for in one response: a page of
// pods, managed fields and all, is a few MB at most.
const pageSize = 100

// maxPages bounds the pages of one listing: a server that answers every
// page with a next one, and few or no items, ends there.
const maxPages = 2*MaxTargets/pageSize + 10

// serviceNameLabel is the label of an EndpointSlice that names its
// Service (discovery.k8s.io/v1's LabelServiceName).
const serviceNameLabel = "kubernetes.io/service-name"

// Config says which pods to follow.
type Config struct {
	// Namespace is where they are ("": the kubeconfig context's, in a
	// cluster the pod's own, else "default").
	Namespace string
	// Selector picks the pods by their labels (app=vllm,tier!=test; "":
	// every pod, which needs Service).
	Selector string
	// Service, when set, takes the endpoints from this Service's
	// EndpointSlices (their readiness as the Service sees it, a named
	// Port among the Service's port names) and the groups from the
	// pods; else the pods the selector picks are the targets.
	Service string
	// Port is the metrics port: a number, or a name (a container port's
	// name, or the Service port's name with Service).
	Port string
	// By is the pod label whose value is a target's group ("": none).
	By string
}

// Target is one server found.
type Target struct {
	// Name is its pod's name; Addr the address of its metrics port
	// (ip:port); Group its pod's By label, "" where the pod lacks it.
	// All three come from the API server: sanitise before showing.
	Name, Addr, Group string
	// Ready is the pod's Ready condition (the endpoint's with Service):
	// a target not ready is kept, to be shown as such.
	Ready bool
}

// Source lists a Config's targets through the API server.
type Source struct {
	core, disc rest.Interface // the core/v1 and discovery.k8s.io/v1 clients
	cfg        Config
	port       int // the numbered port, 0 for a name
	selector   labels.Selector
}

// check holds cfg to the API's rules for names, labels and ports; its
// errors speak the Config's field names. It returns cfg with its
// namespace set, the numbered port (0 for a name) and the selector.
func check(cfg Config) (Config, int, labels.Selector, error) {
	if cfg.Namespace == "" {
		cfg.Namespace = metav1.NamespaceDefault
	}
	if errs := validation.IsDNS1123Label(cfg.Namespace); len(errs) > 0 {
		return cfg, 0, nil, fmt.Errorf("kube: namespace %q: %s", cfg.Namespace, errs[0])
	}
	sel, err := labels.Parse(cfg.Selector)
	if err != nil {
		return cfg, 0, nil, fmt.Errorf("kube: selector %q: %s", cfg.Selector, oneLine(err))
	}
	switch {
	case cfg.Selector == "" && cfg.Service == "":
		return cfg, 0, nil, errors.New("kube: a selector (app=vllm) or a Service names the pods")
	case cfg.Service != "" && len(validation.IsDNS1035Label(cfg.Service)) > 0:
		return cfg, 0, nil, fmt.Errorf("kube: Service %q: %s", cfg.Service, validation.IsDNS1035Label(cfg.Service)[0])
	case cfg.By != "" && len(validation.IsQualifiedName(cfg.By)) > 0:
		return cfg, 0, nil, fmt.Errorf("kube: label %q: %s", cfg.By, validation.IsQualifiedName(cfg.By)[0])
	}
	n, err := strconv.Atoi(cfg.Port)
	switch {
	case err == nil && (n < 1 || n > 65535):
		return cfg, 0, nil, fmt.Errorf("kube: port %d is not 1..65535", n)
	case err != nil && len(validation.IsValidPortName(cfg.Port)) > 0:
		return cfg, 0, nil, fmt.Errorf("kube: port %q is neither a number nor a port's name: %s", cfg.Port, validation.IsValidPortName(cfg.Port)[0])
	}
	return cfg, n, sel, nil
}

// Namespace is the namespace listed.
func (s *Source) Namespace() string { return s.cfg.Namespace }

// Follow lists the targets now and every `every` after, each listing
// within timeout, and hands each to found; it returns when ctx ends or
// found returns false.
func (s *Source) Follow(ctx context.Context, every, timeout time.Duration, found func([]Target, error) bool) {
	discover.Repeat(ctx, every, timeout, func(ctx context.Context) bool {
		ts, err := s.List(ctx)
		return found(ts, err)
	})
}

// List is every target now, sorted by name and address, at most
// MaxTargets. Pods without an address yet (pending) are no target; pods
// without the port are left out and named in the error, returned beside
// the others.
func (s *Source) List(ctx context.Context) ([]Target, error) {
	pods, cut, invalid, err := s.pods(ctx)
	if err != nil {
		return nil, err
	}
	var ts []Target
	var lacking []string
	if s.cfg.Service == "" {
		ts, lacking = s.fromPods(pods)
	} else {
		var sliceCut bool
		ts, lacking, sliceCut, err = s.fromSlices(ctx, pods)
		if err != nil {
			return nil, err
		}
		cut = cut || sliceCut
	}
	slices.SortFunc(ts, func(a, b Target) int {
		return strings.Compare(a.Name+" "+a.Addr, b.Name+" "+b.Addr)
	})
	var errs []error
	slices.Sort(lacking)
	if lacking = slices.Compact(lacking); len(lacking) > 0 {
		errs = append(errs, fmt.Errorf("kube: %d %s without the port %q: %s", len(lacking), plural(len(lacking), "pod", "pods"), s.cfg.Port, names(lacking)))
	}
	if invalid > 0 {
		errs = append(errs, fmt.Errorf("kube: %d %s with a name, an address or a --by label Kubernetes does not allow, left out", invalid, plural(invalid, "pod", "pods")))
	}
	if cut {
		errs = append(errs, fmt.Errorf("kube: more than %d pods or endpoints in %s: the first %d followed", MaxTargets, s.cfg.Namespace, MaxTargets))
	}
	return ts, errors.Join(errs...)
}

// pod is what a target needs of a pod.
type pod struct {
	name, ip, group string
	ready           bool
	port            int // the named port's number in its containers, 0 if none
}

// pods lists the selected pods in pages, keeping what a target needs;
// cut says the namespace had more than MaxTargets; invalid counts the
// pods left out for what Kubernetes does not allow (allowed counts).
func (s *Source) pods(ctx context.Context) (out map[string]pod, cut bool, invalid int, err error) {
	out = map[string]pod{}
	next := ""
	for range maxPages {
		var list podList
		req := s.core.Get().Namespace(s.cfg.Namespace).Resource("pods")
		if err := page(ctx, req, s.selector.String(), next, &list); err != nil {
			return nil, false, 0, &APIError{What: "list pods in " + s.cfg.Namespace, Err: err}
		}
		for i := range list.Items {
			p := &list.Items[i]
			if len(out) >= MaxTargets {
				return out, true, invalid, nil
			}
			// A server that ignores the selector is held to it.
			if !s.selector.Matches(labels.Set(p.Metadata.Labels)) {
				continue
			}
			v := pod{name: p.Metadata.Name, ip: p.Status.PodIP, group: p.Metadata.Labels[s.cfg.By],
				ready: p.Metadata.DeletionTimestamp == "" && p.Status.Phase == "Running" && p.ready()}
			if !allowed(v) {
				invalid++
				continue
			}
			if s.port == 0 {
				v.port = p.namedPort(s.cfg.Port)
			}
			out[v.name] = v
		}
		if next = list.Metadata.Continue; next == "" {
			return out, false, invalid, nil
		}
	}
	return out, true, invalid, nil
}

// allowed says whether a pod's name, address and group are as
// Kubernetes allows them (a name of 253 bytes at most, a label value of
// 63, an IP): what a target keeps of a pod. A hostile API server's pods
// of a 7 MB label, a page each, held 2.2 GB over the pages of a listing.
func allowed(p pod) bool {
	return len(p.name) <= 253 && len(p.group) <= 63 && (p.ip == "" || net.ParseIP(p.ip) != nil)
}

// fromPods is a target per pod with an address.
func (s *Source) fromPods(pods map[string]pod) (ts []Target, lacking []string) {
	for _, p := range pods {
		if p.ip == "" {
			continue
		}
		port := s.port
		if port == 0 {
			port = p.port
		}
		if port == 0 {
			lacking = append(lacking, p.name)
			continue
		}
		ts = append(ts, Target{Name: p.name, Addr: net.JoinHostPort(p.ip, strconv.Itoa(port)), Group: p.group, Ready: p.ready})
	}
	return ts, lacking
}

// fromSlices is a target per endpoint of the Service's EndpointSlices
// whose pod the selector picked, each address once.
func (s *Source) fromSlices(ctx context.Context, pods map[string]pod) (ts []Target, lacking []string, cut bool, err error) {
	seen := map[string]bool{}
	next := ""
	for range maxPages {
		var list sliceList
		req := s.disc.Get().Namespace(s.cfg.Namespace).Resource("endpointslices")
		if err := page(ctx, req, serviceNameLabel+"="+s.cfg.Service, next, &list); err != nil {
			return nil, nil, false, &APIError{What: "list the EndpointSlices of " + s.cfg.Namespace + "/" + s.cfg.Service, Err: err}
		}
		for i := range list.Items {
			sl := &list.Items[i]
			if sl.Metadata.Labels[serviceNameLabel] != s.cfg.Service || sl.AddressType == "FQDN" {
				continue
			}
			port := s.port
			if port == 0 {
				port = sl.namedPort(s.cfg.Port)
			}
			for _, ep := range sl.Endpoints {
				if len(seen) >= MaxTargets {
					return ts, lacking, true, nil
				}
				if ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" || len(ep.Addresses) == 0 {
					continue
				}
				p, ok := pods[ep.TargetRef.Name]
				if !ok {
					continue // a pod the selector did not pick
				}
				if port == 0 {
					lacking = append(lacking, p.name)
					continue
				}
				if net.ParseIP(ep.Addresses[0]) == nil {
					continue // no IP: not what an endpoint of a pod holds
				}
				addr := net.JoinHostPort(ep.Addresses[0], strconv.Itoa(port))
				if seen[addr] {
					continue // an endpoint in two slices while they change
				}
				seen[addr] = true
				ready := ep.Conditions.Ready == nil || *ep.Conditions.Ready // nil is ready, as the API says
				ts = append(ts, Target{Name: p.name, Addr: addr, Group: p.group, Ready: ready})
			}
		}
		if next = list.Metadata.Continue; next == "" {
			return ts, lacking, false, nil
		}
	}
	return ts, lacking, true, nil
}

// APIError is a request the API server refused or never answered, in one
// line: what was asked, and why.
type APIError struct {
	What string
	Err  error
}

func (e *APIError) Error() string { return "kube: " + e.What + ": " + oneLine(e.Err) }

// Unwrap is client-go's error (apierrors.IsForbidden and its kind work on it).
func (e *APIError) Unwrap() error { return e.Err }

// oneLine is an error from the API server or client-go, sanitised, any
// credential taken out, on one line of at most 300 runes.
func oneLine(err error) string { return probe.Redact(sanitize.Text(err.Error()), 300) }

// names is the first few of a sorted list of pod names, sanitised.
func names(ns []string) string {
	var out []string
	for i, n := range ns {
		if i == 3 {
			out = append(out, fmt.Sprintf("and %d more", len(ns)-3))
			break
		}
		out = append(out, sanitize.Short(n, 63))
	}
	return strings.Join(out, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
