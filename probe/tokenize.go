package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/infertop/infertop/readlimit"
)

// ErrNoTokenize is Tokenize's answer from a server that has no
// /tokenize (404, 405, 501, or an answer with no count in it): not
// offered by this server.
var ErrNoTokenize = errors.New("/tokenize: not offered by this server")

// maxTokenizeAnswer bounds a /tokenize answer: a token list of a long
// prompt is a few bytes a token.
const maxTokenizeAnswer = 8 << 20

// Tokenize counts text's tokens with the server's own tokenizer, through
// its /tokenize (vLLM's and SGLang's {"prompt"}, llama-server's
// {"content"}: both sent, each server reads its own), from the count it
// gives or its token list's length. A server without one answers
// ErrNoTokenize.
func (c *Client) Tokenize(ctx context.Context, text string) (int, error) {
	u, err := parseBase(c.cfg.URL)
	if err != nil {
		return 0, err
	}
	u.Path, u.RawQuery = "/tokenize", ""
	body, err := json.Marshal(map[string]any{"model": c.cfg.Model, "prompt": text, "content": text})
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout+10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header = c.header.Clone()
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("/tokenize: %s", c.redact(err.Error()))
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return 0, ErrNoTokenize
	default:
		excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		return 0, fmt.Errorf("/tokenize: %s", c.redact(fmt.Sprintf("HTTP %d: %s", resp.StatusCode, errorText(excerpt))))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenizeAnswer+1))
	if err != nil {
		return 0, fmt.Errorf("/tokenize: %s", c.redact(err.Error()))
	}
	if len(data) > maxTokenizeAnswer {
		return 0, fmt.Errorf("/tokenize: an answer past %d MiB", maxTokenizeAnswer>>20)
	}
	return tokenCount(data)
}

// tokenCount reads a /tokenize answer: its count, else its token list's
// length (ids, or llama-server's {"id","piece"} objects).
func tokenCount(data []byte) (int, error) {
	var a struct {
		Count  *int      `json:"count"`
		Tokens tokenList `json:"tokens"`
	}
	if err := json.Unmarshal(data, &a); err != nil {
		if strings.HasPrefix(strings.TrimSpace(string(data)), "{") {
			return 0, fmt.Errorf("/tokenize: %w", err)
		}
		return 0, ErrNoTokenize // a page, not an API's answer
	}
	switch {
	case a.Count != nil && *a.Count >= 0:
		return *a.Count, nil
	case a.Tokens.set:
		return a.Tokens.n, nil
	}
	return 0, ErrNoTokenize
}

// tokenList is a token list's length, counted as it is decoded without
// holding its elements: a list of 4 M ids in 8 MB, each a RawMessage,
// cost 618 MB.
type tokenList struct {
	n   int
	set bool // a list was given (null: none)
}

// UnmarshalJSON counts the elements of b, a JSON value the decoder has
// checked: the commas outside strings at the list's own depth.
func (l *tokenList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
		return nil
	case len(b) < 2 || b[0] != '[':
		return errors.New("tokens: not a list")
	}
	l.set = true
	inner := bytes.TrimSpace(b[1 : len(b)-1])
	if len(inner) == 0 {
		return nil
	}
	depth := 0
	l.n = 1
	readlimit.JSONScan(inner, func(c byte, _ int) {
		switch c {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 0 {
				l.n++
			}
		}
	})
	return nil
}
