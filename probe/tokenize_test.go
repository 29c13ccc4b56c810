package probe

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/tools/hostile"
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

// TestTokenCountBounded: a token list is counted, not held: ids,
// llama-server's {"id","piece"} objects (a piece may hold a comma, a
// bracket or an escaped quote), an empty list; and a list of 4 M ids in
// 8 MB (618 MB allocated as RawMessages) costs a few MB.
func TestTokenCountBounded(t *testing.T) {
	for body, want := range map[string]int{
		`{"tokens":[1,2,3]}`: 3,
		`{"tokens":[{"id":1,"piece":"a,]"},{"id":2,"piece":"\"[{,"}]}`: 2,
		`{"tokens":[[1,2],[3]]}`: 2,
		`{"tokens":[]}`:          0,
		`{"tokens": [ 7 ] }`:     1,
	} {
		if n, err := tokenCount([]byte(body)); err != nil || n != want {
			t.Errorf("%s: %d, %v; want %d", body, n, err, want)
		}
	}
	if _, err := tokenCount([]byte(`{"tokens":null}`)); !errors.Is(err, ErrNoTokenize) {
		t.Errorf("null tokens: %v", err)
	}
	if _, err := tokenCount([]byte(`{"tokens":"abc"}`)); err == nil || errors.Is(err, ErrNoTokenize) {
		t.Errorf("a string for tokens: %v", err)
	}
	data := []byte(`{"tokens":[` + strings.Repeat("0,", 4<<20-20) + `0]}`)
	var n int
	got := hostile.Allocated(func() { n, _ = tokenCount(data) })
	t.Logf("%d MB: %d tokens, %d KB allocated", len(data)>>20, n, got>>10)
	if n != 4<<20-19 || got > 4<<20 {
		t.Errorf("%d tokens counted, %d MB allocated", n, got>>20)
	}
}
