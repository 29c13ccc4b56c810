package probe

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/infertop/infertop/sim"
)

// TestTokenize: the sim's /tokenize counts as the sim does; a server
// without one is ErrNoTokenize; llama-server's recorded answers (ids, and
// ids with their pieces) are counted by their lists.
func TestTokenize(t *testing.T) {
	p, _ := sim.Preset("fast")
	_, c := simClient(t, p, Config{})
	text := "the river and the extraordinarily long sea"
	if n, err := c.Tokenize(context.Background(), text); err != nil || n != sim.CountTokens(text) {
		t.Fatalf("sim: %d tokens, %v; want %d", n, err, sim.CountTokens(text))
	}

	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	c2, _ := New(Config{URL: srv.URL + "/v1/chat/completions"})
	defer c2.Close()
	if _, err := c2.Tokenize(context.Background(), "x"); !errors.Is(err, ErrNoTokenize) {
		t.Fatalf("no /tokenize: %v", err)
	}

	for file, want := range map[string]int{"tokenize.body": 6, "tokenize-with-pieces.body": 6, "tokenize-add-special.body": 7} {
		b, err := os.ReadFile("/work/shared/fixtures/structured/llamacpp/" + file)
		if err != nil {
			t.Skipf("no recording: %v", err)
		}
		if n, err := tokenCount(b); err != nil || n != want {
			t.Errorf("%s: %d, %v; want %d", file, n, err, want)
		}
	}
	if _, err := tokenCount([]byte("<html>")); !errors.Is(err, ErrNoTokenize) {
		t.Errorf("a page: %v", err)
	}
	if _, err := tokenCount([]byte(`{"other":1}`)); !errors.Is(err, ErrNoTokenize) {
		t.Errorf("no count: %v", err)
	}
}
