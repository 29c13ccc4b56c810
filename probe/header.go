package probe

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/infertop/infertop/readlimit"
)

// ErrBadHeader is a header line that is not 'Name: value'. Its error
// never shows the line: a header's value may be a secret.
var ErrBadHeader = errors.New("want 'Name: value' (what was given is not shown: it may be a secret)")

// ParseHeaders reads extra request headers, each 'Name: value', or
// @FILE naming a file of them, one a line ('#' starts a comment), so that
// the values stay out of the process list.
func ParseHeaders(specs []string) (http.Header, error) {
	h := http.Header{}
	var lines []string
	for _, s := range specs {
		file, ok := strings.CutPrefix(s, "@")
		if !ok {
			lines = append(lines, s)
			continue
		}
		b, err := readlimit.File(file, readlimit.Secret)
		if err != nil {
			return nil, fmt.Errorf("@%s: %w", file, err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				lines = append(lines, l)
			}
		}
	}
	for _, l := range lines {
		name, value, ok := strings.Cut(l, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, ErrBadHeader
		}
		h.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	return h, nil
}
