package probe

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Endpoints that would take credentials elsewhere or echo them back.

// recordingServer counts the requests it gets and what credential headers
// came with them.
func recordingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		t.Errorf("the redirect's target got %s %s with x-api-key %q", r.Method, r.URL, r.Header.Get("X-Api-Key"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"data":[{"id":"stolen"}]}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestRedirectNotFollowed: a 307 to another host is an answer of its own
// class, and the other host hears nothing. Before, the POST was replayed
// there with x-api-key and every custom header (Go drops only
// Authorization).
func TestRedirectNotFollowed(t *testing.T) {
	other, got := recordingServer(t)
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+r.URL.Path+"?api_key=presigned-zzz", code)
			}))
			defer srv.Close()
			cfg := Config{URL: srv.URL + "/v1/chat/completions", Model: "m", Timeout: 5 * time.Second,
				Header: http.Header{"X-Api-Key": {"hdr-secret-1234"}}}
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.fresh.CheckRedirect == nil || c.http.CheckRedirect == nil {
				t.Fatal("a client that follows redirects")
			}
			res := c.Do(context.Background(), Request{Prompt: "x", MaxTokens: 4})
			if res.Class != HTTP3xx || res.Status != code || res.Class.String() != "3xx" {
				t.Fatalf("class %v status %d (%s), want 3xx %d", res.Class, res.Status, res.Err, code)
			}
			if !strings.Contains(res.Err, "redirected to "+other.URL+"/v1/chat/completions?api_key=") ||
				!strings.Contains(res.Err, "infertop does not follow redirects") || strings.Contains(res.Err, "presigned") {
				t.Fatalf("Err %q", res.Err)
			}
			// Detection and the model list do not follow either.
			if _, _, err := Detect(context.Background(), cfg, srv.URL); err == nil || !strings.Contains(err.Error(), "redirected to") {
				t.Fatalf("Detect: %v", err)
			}
			if _, err := c.Models(context.Background(), srv.URL+"/v1"); err == nil || !strings.Contains(err.Error(), "redirected to") {
				t.Fatalf("Models: %v", err)
			}
			if info := c.ServerInfo(context.Background(), srv.URL+"/v1"); len(info) != 0 {
				t.Fatalf("ServerInfo: %v", info)
			}
		})
	}
	if n := got.Load(); n != 0 {
		t.Fatalf("the other host got %d requests", n)
	}
}

// TestHeaderValuesRedacted: a 401 that echoes the configured headers'
// values does not put them in the Result.
func TestHeaderValuesRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "key %s refused; auth %q; token alone %s; org %s",
			r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"),
			strings.TrimPrefix(r.Header.Get("Authorization"), "Token "), r.Header.Get("X-Org"))
	}))
	defer srv.Close()
	secrets := []string{"hdr-secret-1234", "Token opaque-cred-5678", "opaque-cred-5678", "org-42"}
	c, err := New(Config{URL: srv.URL, Model: "m", Timeout: 5 * time.Second, Header: http.Header{
		"X-Api-Key": {secrets[0]}, "Authorization": {secrets[1]}, "X-Org": {secrets[3]}, "X-Short": {"abc"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res := c.Do(context.Background(), Request{Prompt: "x", MaxTokens: 4})
	if res.Class != HTTP4xx || res.Status != http.StatusUnauthorized {
		t.Fatalf("class %v status %d", res.Class, res.Status)
	}
	for _, s := range secrets {
		if strings.Contains(res.Err, s) {
			t.Fatalf("Err %q holds %q", res.Err, s)
		}
	}
	if !strings.Contains(res.Err, "HTTP 401: key [REDACTED] refused") {
		t.Fatalf("Err %q", res.Err)
	}
}
