package watch

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestVerdictHandler: /verdict says the state in its JSON and its
// status (503 before any read, 200 undecided, 409 regressed), as Argo's
// web provider and Flagger's webhooks read them.
func TestVerdictHandler(t *testing.T) {
	t.Parallel()
	w, err := New(Config{Source: fleetOf(1, 1)})
	if err != nil {
		t.Fatal(err)
	}
	get := func() (int, Verdict) {
		rec := httptest.NewRecorder()
		w.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/verdict", nil))
		var v Verdict
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		return rec.Code, v
	}
	if code, v := get(); code != http.StatusServiceUnavailable || v.State != Unusable {
		t.Fatalf("before a read: %d %+v", code, v)
	}
	for _, c := range []struct {
		state string
		code  int
	}{{Undecided, 200}, {Held, 200}, {Regressed, 409}, {Unusable, 503}} {
		w.hub.Publish(Snapshot{Verdict: Verdict{State: c.state}})
		code, v := get()
		if code != c.code || v.State != c.state {
			t.Errorf("%s: %d %+v", c.state, code, v)
		}
	}
}

// TestHostileNames: a group named with terminal escapes (a pod's label
// is anyone's to set) reaches the verdict's line and the text only
// sanitised.
func TestHostileNames(t *testing.T) {
	t.Parallel()
	src := fleetOf(1, 1)
	for _, s := range src.servers[2:] {
		s.t.Group = "\x1b]0;owned\x07canary"
	}
	s := follow(t, Config{Source: src}, 3, func(Snapshot) bool { return false })
	var b strings.Builder
	if err := Text(&b, s); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(s.Verdict.Line+b.String(), 0x1b) || !strings.Contains(b.String(), `\x1b]0;owned`) {
		t.Fatalf("line %q\ntext:\n%s", s.Verdict.Line, b.String())
	}
}
