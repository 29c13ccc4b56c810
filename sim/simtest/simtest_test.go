package simtest

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/sim"
)

// TestStartServesAndRecords: the URLs reach the sim's API and the paths
// outside it, each request leaves a record, and the records outlive Close.
func TestStartServesAndRecords(t *testing.T) {
	p, _ := sim.Preset("fast")
	s := Start(t, p)
	if !strings.HasPrefix(s.Origin, "http://127.0.0.1:") || s.URL != s.Origin+"/v1" || s.ChatURL != s.URL+"/chat/completions" {
		t.Fatalf("origin %q, URL %q, chat URL %q", s.Origin, s.URL, s.ChatURL)
	}
	for _, u := range []string{s.Origin + "/health", s.URL + "/models"} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", u, resp.Status)
		}
	}
	t0 := time.Now()
	resp, err := http.Post(s.ChatURL, "application/json", strings.NewReader(
		`{"model":"`+p.Model+`","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "[DONE]") {
		t.Fatalf("chat: %s %q", resp.Status, body)
	}
	s.Close()
	s.Close() // a test's own Close, then its cleanup's
	recs := s.Sim.Records()
	if len(recs) != 1 || recs[0].OutputTokens != 5 || recs[0].Arrived.Before(t0) {
		t.Fatalf("records %+v", recs)
	}
}

// TestStartRefusesBadParams: parameters sim.New refuses fail the test
// rather than leave it a nil server.
func TestStartRefusesBadParams(t *testing.T) {
	ft := &fatalTB{TB: t}
	func() {
		defer func() { recover() }() // fatalTB's Fatalf stops this goroutine's call, as t.Fatal would
		Start(ft, sim.Params{})
	}()
	if !strings.Contains(ft.msg, "model: the name is empty") {
		t.Fatalf("Start with zero params: %q", ft.msg)
	}
}

// fatalTB catches Fatalf so a test can watch another call fail.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic("fatal")
}
