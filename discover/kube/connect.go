package kube

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/infertop/infertop/readlimit"
)

// MaxBody bounds one response of the API server: a page of pageSize pods
// is a few MB; a server that sends more is refused, not held in memory.
const MaxBody = 8 << 20

// Timeout bounds one request to the API server.
const Timeout = 10 * time.Second

// Connect makes cfg's Source with a client of the cluster that kubeconfig
// names: a path ("" : $KUBECONFIG's first file or ~/.kube/config, and in
// a pod the pod's own service account when neither exists). The file is
// read with a bound; an empty cfg.Namespace becomes the kubeconfig
// context's namespace (the pod's own in a cluster).
func Connect(cfg Config, kubeconfig string) (*Source, error) {
	rc, ns, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	if cfg.Namespace == "" {
		cfg.Namespace = ns
	}
	if rc.ExecProvider != nil {
		// A credential plugin (EKS's, GKE's) gets no terminal input: the
		// dashboard holds it.
		rc.ExecProvider.StdinUnavailable = true
		rc.ExecProvider.StdinUnavailableMessage = "infertop holds the terminal"
	}
	return NewForConfig(rc, cfg)
}

// NewForConfig is cfg's Source with a client of rc: every response
// bounded, every request timed, no redirect followed (client-go adds the
// credentials to every request it sends, a redirected one too), no
// warning of the server's printed, JSON only.
func NewForConfig(rc *rest.Config, cfg Config) (*Source, error) {
	cfg, port, sel, err := check(cfg)
	if err != nil {
		return nil, err
	}
	rc = rest.CopyConfig(rc)
	rc.Timeout = Timeout
	rc.UserAgent = "infertop"
	rc.ContentType = "application/json"
	rc.AcceptContentTypes = "application/json"
	rc.WarningHandler = rest.NoWarnings{}
	rc.QPS = -1 // no client-side throttle, whose long waits klog prints: Follow paces the requests
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return capped{rt} })
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("kube: the client: %s", oneLine(err))
	}
	hc.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		return fmt.Errorf("the API server redirected to %s: not followed with the credentials", req.URL.Host)
	}
	core, err := restClient(rc, hc, "/api", schema.GroupVersion{Version: "v1"})
	if err != nil {
		return nil, err
	}
	disc, err := restClient(rc, hc, "/apis", schema.GroupVersion{Group: "discovery.k8s.io", Version: "v1"})
	if err != nil {
		return nil, err
	}
	return &Source{core: core, disc: disc, cfg: cfg, port: port, selector: sel}, nil
}

// restClient is a client of one API group's version. Its bodies are
// read raw and decoded here, so it needs no scheme of the API's types:
// client-go's clientset would link every group's (a large build).
func restClient(rc *rest.Config, hc *http.Client, apiPath string, gv schema.GroupVersion) (*rest.RESTClient, error) {
	c := rest.CopyConfig(rc)
	c.APIPath = apiPath
	c.GroupVersion = &gv
	c.NegotiatedSerializer = serializer.NewCodecFactory(runtime.NewScheme()).WithoutConversion()
	client, err := rest.RESTClientForConfigAndClient(c, hc)
	if err != nil {
		return nil, fmt.Errorf("kube: the client: %s", oneLine(err))
	}
	return client, nil
}

// restConfig is the client configuration a kubeconfig path names (see
// Connect), and its context's namespace.
func restConfig(path string) (*rest.Config, string, error) {
	explicit := path != ""
	if !explicit {
		path = defaultKubeconfig()
	}
	if !explicit && (path == "" || !exists(path)) {
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, "", errors.New("kube: no kubeconfig ($KUBECONFIG, ~/.kube/config) and not in a pod: name one")
		}
		ns := "default"
		if b, err := readlimit.File("/var/run/secrets/kubernetes.io/serviceaccount/namespace", readlimit.Secret); err == nil && strings.TrimSpace(string(b)) != "" {
			ns = strings.TrimSpace(string(b))
		}
		return rc, ns, nil
	}
	b, err := readlimit.File(path, readlimit.Certs)
	if err != nil {
		return nil, "", fmt.Errorf("kube: kubeconfig: %w", err)
	}
	cc, err := clientcmd.NewClientConfigFromBytes(b)
	if err != nil {
		return nil, "", fmt.Errorf("kube: kubeconfig %s: %s", path, oneLine(err))
	}
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kube: kubeconfig %s: %s", path, oneLine(err))
	}
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	return rc, ns, nil
}

// defaultKubeconfig is $KUBECONFIG's first file, else ~/.kube/config.
func defaultKubeconfig() string {
	if env := os.Getenv("KUBECONFIG"); env != "" {
		return filepath.SplitList(env)[0]
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".kube", "config")
	}
	return ""
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// capped bounds every response body at MaxBody.
type capped struct{ rt http.RoundTripper }

func (c capped) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err == nil {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{readlimit.Reader(resp.Body, MaxBody), resp.Body}
	}
	return resp, err
}
