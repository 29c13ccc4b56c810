package promsource

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// matcherShape is one matcher as parseMatch writes it: a label name, an
// operator, one Go-quoted string and nothing after it.
var matcherShape = regexp.MustCompile(`^([a-zA-Z_][a-zA-Z0-9_]*)(=~|!~|!=|=)(".*")$`)

// FuzzParseMatch: whatever --match says, what joins the query is
// matchers, each a name, an operator and one quoted string: nothing can
// close the selector or add to the expression.
func FuzzParseMatch(f *testing.F) {
	for _, s := range []string{`{job="vllm"}`, `job='a', b=~"c|d"`, "{a!=`x\"y`}", `{job="a"}) or vector(1`, `a="\"}"`, `{a="b",}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		ms, err := parseMatch(in)
		if err != nil {
			if strings.Contains(err.Error(), "\n") && !strings.Contains(in, "\n") {
				t.Errorf("%q: a line break in %q", in, err)
			}
			return
		}
		for _, m := range ms {
			sub := matcherShape.FindStringSubmatch(m)
			if sub == nil {
				t.Fatalf("%q: matcher %q", in, m)
			}
			v, err := strconv.Unquote(sub[3])
			if err != nil || strconv.Quote(v) != sub[3] {
				t.Fatalf("%q: matcher %q is not one quoted string", in, m)
			}
		}
	})
}
