package otlp

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"

	"github.com/infertop/infertop/readlimit"
)

// maxHeaderBytes bounds a collector's response headers: a collector's
// are a few hundred bytes, and Go's default lets one send 10 MB.
const maxHeaderBytes = 64 << 10

// httpClient is the one client of both exporters. The SDK's own follows
// a collector's redirects, and Go keeps every header but Authorization
// and Cookie on a redirect to another host: the token of
// OTEL_EXPORTER_OTLP_HEADERS (x-honeycomb-team, api-key) went to
// wherever a collector pointed. This one follows none (a redirect is a
// failed push, said at the end) and bounds the headers. Given a client
// of ours, the SDK no longer reads OTEL_EXPORTER_OTLP_CERTIFICATE,
// OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY: they are read
// here.
func httpClient(getenv func(string) string) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxResponseHeaderBytes = maxHeaderBytes
	if ca := getenv("OTEL_EXPORTER_OTLP_CERTIFICATE"); ca != "" {
		pem, err := readlimit.File(ca, readlimit.Certs)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %s: no PEM certificates in it", ca)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if cert, key := getenv("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"), getenv("OTEL_EXPORTER_OTLP_CLIENT_KEY"); cert != "" || key != "" {
		pair, err := keyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: %w", err)
		}
		if tr.TLSClientConfig == nil {
			tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		tr.TLSClientConfig.Certificates = []tls.Certificate{pair}
	}
	return &http.Client{Transport: tr, Timeout: exportTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, nil
}

// keyPair reads a client certificate and its key, bounded.
func keyPair(cert, key string) (tls.Certificate, error) {
	if cert == "" || key == "" {
		return tls.Certificate{}, fmt.Errorf("a client certificate needs its key (OTEL_EXPORTER_OTLP_CLIENT_KEY) and the key its certificate")
	}
	c, err := readlimit.File(cert, readlimit.Certs)
	if err != nil {
		return tls.Certificate{}, err
	}
	k, err := readlimit.File(key, readlimit.Secret)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(c, k)
}
