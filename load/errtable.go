package load

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sanitize"
)

// maxErrorKeys bounds the distinct failures kept by message: an endpoint
// that puts a request id in every error must not grow the table without
// end. Failures past it are counted under their class with OtherErrors as
// the message.
const maxErrorKeys = 64

// OtherErrors is the message of an ErrorCount that gathers the failures of
// one class whose messages did not fit in the table.
const OtherErrors = "(other messages)"

// ErrorCount is how many failures since the start or the last reset had
// one class, HTTP status (0: no response) and message (redacted, short, as
// probe wrote it).
type ErrorCount struct {
	Class   probe.ErrorClass
	Status  int
	Message string
	Count   int64
}

// Line is the error as one line, safe for a terminal: class, HTTP status,
// message. The status is left out when the message already begins with it,
// as probe's "HTTP 500: …" do, so a narrow panel does not spend a line
// saying one thing twice. The text summary, the dashboard and the commands'
// last words all write an error this way.
func (e ErrorCount) Line() string {
	t := e.Class.String()
	if e.Status >= 300 && !strings.HasPrefix(e.Message, fmt.Sprintf("HTTP %d", e.Status)) {
		t += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Message != "" {
		t += ": " + sanitize.Text(e.Message)
	}
	return t
}

type errorKey struct {
	class   probe.ErrorClass
	status  int
	message string
}

// errorTable counts failures by class, status and message, like oha's
// error distribution. The aggregator's goroutine alone uses it.
type errorTable struct {
	counts map[errorKey]int64
	sorted []ErrorCount // the counts by frequency; nil when stale
}

func (t *errorTable) add(r *probe.Result) {
	if t.counts == nil {
		t.counts = map[errorKey]int64{}
	}
	k := errorKey{r.Class, r.Status, groupMessage(r.Err)}
	if _, ok := t.counts[k]; !ok && len(t.counts) >= maxErrorKeys {
		k = errorKey{class: r.Class, message: OtherErrors} // at most one per class past the bound
	}
	t.counts[k]++
	t.sorted = nil
}

// localSide is the local end of a connection in Go's network errors
// ("read tcp 127.0.0.1:40398->10.0.0.7:8000: ..."): an address and an
// ephemeral port, IPv4 or IPv6, before the arrow to the remote end.
var localSide = regexp.MustCompile(`(?:\d{1,3}(?:\.\d{1,3}){3}|\[[0-9A-Fa-f:.%\w]*\]):\d+->`)

// groupMessage is a failure's message as the table groups it: the local
// end of the connection left out, since its port differs on every
// connection and would make each reset a distinct error of one, ranking a
// 5xx seen three times above seven resets.
func groupMessage(msg string) string {
	if !strings.Contains(msg, "->") {
		return msg
	}
	return localSide.ReplaceAllString(msg, "")
}

func (t *errorTable) reset() { *t = errorTable{} }

// list returns the counts, most frequent first, in a slice of the
// caller's own; it sorts again only after a failure came in.
func (t *errorTable) list() []ErrorCount {
	if len(t.counts) == 0 {
		return nil
	}
	if t.sorted == nil {
		t.sorted = make([]ErrorCount, 0, len(t.counts))
		for k, n := range t.counts {
			t.sorted = append(t.sorted, ErrorCount{Class: k.class, Status: k.status, Message: k.message, Count: n})
		}
		slices.SortFunc(t.sorted, func(a, b ErrorCount) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Class, b.Class), cmp.Compare(a.Status, b.Status), cmp.Compare(a.Message, b.Message))
		})
	}
	return slices.Clone(t.sorted)
}
