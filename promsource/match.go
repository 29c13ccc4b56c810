package promsource

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ErrMatch is a --match value that is not a list of label matchers.
var ErrMatch = errors.New(`want label matchers: {job="vllm"} or {job="vllm",namespace=~"prod-.*"}`)

// labelName is a Prometheus label name.
var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// parseMatch reads label matchers ({a="b", c=~"d"}; the braces may be
// left out) and writes them again, each value quoted anew, so that what
// joins the query is matchers and nothing else.
func parseMatch(s string) ([]string, error) {
	rest := strings.TrimSpace(s)
	if strings.HasPrefix(rest, "{") {
		if !strings.HasSuffix(rest, "}") {
			return nil, fmt.Errorf("%q: no closing brace: %w", s, ErrMatch)
		}
		rest = strings.TrimSpace(rest[1 : len(rest)-1])
	}
	var out []string
	for rest != "" {
		i := strings.IndexAny(rest, "=!")
		if i < 0 {
			return nil, fmt.Errorf("%q: %w", s, ErrMatch)
		}
		name := strings.TrimSpace(rest[:i])
		if !labelName.MatchString(name) {
			return nil, fmt.Errorf("%q: %q is not a label name: %w", s, name, ErrMatch)
		}
		rest = rest[i:]
		var op string
		for _, o := range []string{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(rest, o) {
				op = o
				break
			}
		}
		if op == "" {
			return nil, fmt.Errorf("%q: %w", s, ErrMatch)
		}
		rest = strings.TrimSpace(rest[len(op):])
		value, after, err := quoted(rest)
		if err != nil {
			return nil, fmt.Errorf("%q: the value of %s: %v: %w", s, name, err, ErrMatch)
		}
		if op == "=~" || op == "!~" {
			if _, err := regexp.Compile("^(?:" + value + ")$"); err != nil {
				return nil, fmt.Errorf("%q: the regexp of %s: %w", s, name, ErrMatch)
			}
		}
		out = append(out, name+op+strconv.Quote(value))
		rest = strings.TrimSpace(after)
		if rest == "" {
			break
		}
		if rest[0] != ',' {
			return nil, fmt.Errorf("%q: matchers are separated by commas: %w", s, ErrMatch)
		}
		rest = strings.TrimSpace(rest[1:])
	}
	return out, nil
}

// quoted reads a PromQL string at the start of s ("...", '...' or
// `...`), returning its value and what follows it.
func quoted(s string) (string, string, error) {
	if s == "" {
		return "", "", errors.New("no value")
	}
	q := s[0]
	if q != '"' && q != '\'' && q != '`' {
		return "", "", errors.New("not quoted")
	}
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q != '`':
			i++
		case s[i] == q:
			lit := s[:i+1]
			if q == '\'' { // Go's Unquote takes one rune in single quotes
				lit = `"` + strings.ReplaceAll(strings.ReplaceAll(lit[1:i], `\'`, `'`), `"`, `\"`) + `"`
			}
			v, err := strconv.Unquote(lit)
			return v, s[i+1:], err
		}
	}
	return "", "", errors.New("no closing quote")
}
