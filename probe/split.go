package probe

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// SplitBy says what tells apart the backends behind one URL (the old and
// the new pods of a rolling update): a response header, or a member of the
// answer's JSON messages. The zero value groups nothing.
type SplitBy struct {
	// Header is a response header's canonical name ("X-Backend"); empty
	// when Field is used.
	Header string
	// Field is a top-level member of the messages: system_fingerprint
	// (OpenAI's name for the backend's configuration) or model.
	Field string
	// Model groups the requests by the model each asked for (a mix of
	// models or adapters, load.Mix), not by anything the server says.
	Model bool
}

// SplitFields are the members a SplitBy may name: both are top-level
// strings of every OpenAI-style chunk, so finding them needs no path.
func SplitFields() []string { return []string{"system_fingerprint", "model"} }

// MaxGroupBytes bounds Result.Group: a value is an identifier, and a
// hostile server's megabyte header must not be copied into every result
// (and every report line) as it is.
const MaxGroupBytes = 64

// MaxGroups is how many distinct values of Result.Group a split names:
// a rolling update has an old and a new version, sometimes a third; more
// would not fit a screen, and a server that sends a new value with every
// answer must not grow anything (the comparison's groups, the
// exporter's series). The values past the first MaxGroups seen are one
// group, OtherGroup. It is defined here, beside the value it bounds, so
// that every reader of Result.Group (compare, exporter) bounds it alike.
const MaxGroups = 4

// OtherGroup names the one group of every value past the first
// MaxGroups seen.
const OtherGroup = "other"

// ParseSplitBy reads "header:NAME" or "field:system_fingerprint" (or
// "field:model", the model the server says answered), or "model" (the
// model each request asked for).
func ParseSplitBy(spec string) (SplitBy, error) {
	if strings.TrimSpace(spec) == "model" {
		return SplitBy{Model: true}, nil
	}
	kind, name, ok := strings.Cut(strings.TrimSpace(spec), ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return SplitBy{}, fmt.Errorf("bad split %q: want model, header:NAME or field:%s", spec, strings.Join(SplitFields(), "|"))
	}
	switch strings.ToLower(kind) {
	case "header":
		if strings.ContainsAny(name, " \t\r\n:") || !utf8.ValidString(name) {
			return SplitBy{}, fmt.Errorf("bad split %q: %q is no header name", spec, name)
		}
		return SplitBy{Header: http.CanonicalHeaderKey(name)}, nil
	case "field":
		for _, f := range SplitFields() {
			if name == f {
				return SplitBy{Field: f}, nil
			}
		}
		return SplitBy{}, fmt.Errorf("bad split %q: the field is %s", spec, strings.Join(SplitFields(), " or "))
	}
	return SplitBy{}, fmt.Errorf("bad split %q: want model, header:NAME or field:%s", spec, strings.Join(SplitFields(), "|"))
}

// IsZero reports whether s groups nothing.
func (s SplitBy) IsZero() bool { return s.Header == "" && s.Field == "" && !s.Model }

// String is the spec as ParseSplitBy reads it back ("" for none).
func (s SplitBy) String() string {
	switch {
	case s.Header != "":
		return "header:" + s.Header
	case s.Field != "":
		return "field:" + s.Field
	case s.Model:
		return "model"
	}
	return ""
}

// groupValue cuts v to MaxGroupBytes at a character's start, so what is
// kept is still UTF-8 where it was, and keeps it apart from OtherGroup
// (see namedOther).
func groupValue(v string) string {
	v = strings.TrimSpace(v)
	if len(v) > MaxGroupBytes {
		i := MaxGroupBytes
		for i > 0 && !utf8.RuneStart(v[i]) {
			i--
		}
		v = v[:i]
	}
	return namedOther(v)
}

// namedOther keeps a server's value apart from OtherGroup: a backend
// really named "other" merged with the overflow group (one Prometheus
// series of both). Such a value is shown quoted, "other", and one quoted
// already gets one more pair of quotes, so no two values meet and none
// is OtherGroup (such a value may pass MaxGroupBytes by the two quotes).
func namedOther(v string) string {
	inner := v
	for len(inner) >= 2 && inner[0] == '"' && inner[len(inner)-1] == '"' {
		inner = inner[1 : len(inner)-1]
	}
	if inner == OtherGroup {
		return `"` + v + `"`
	}
	return v
}

// topString finds the top-level member key of the JSON object data and
// returns its string value (unescaped); ok is false when data is no object
// the scanner reads, the member is absent, null, or not a string. It stops
// at the member, so a field before the choices costs a few bytes' scan.
// It runs only when a Config.SplitBy names a field, and only until a
// request's group is found, so the fast path of every other run is
// untouched.
func topString(data []byte, key string) (v string, ok bool) {
	s := scanner{b: data}
	s.ws()
	if !s.eat('{') {
		return "", false
	}
	var raw []byte
	var escaped bool
	s.members(true, func(k []byte) bool {
		if string(k) != key {
			return s.value(1)
		}
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == '"' {
			raw, escaped, ok = s.str()
		}
		return false // found (or not a string): the rest is not needed
	})
	if !ok {
		return "", false
	}
	if !escaped {
		return string(raw), true
	}
	var out string
	if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &out) != nil {
		return "", false
	}
	return out, true
}
