package report

import (
	"strings"
	"testing"
)

// TestMissingLine: an agent claiming a split of 10,000 ways leaves 9,999
// indexes missing, named in a short line.
func TestMissingLine(t *testing.T) {
	var missing []int
	for i := range 10000 {
		if i != 5 {
			missing = append(missing, i)
		}
	}
	var b strings.Builder
	writeAgents(&b, &AgentsJSON{Source: "10.0.0.1:7070", Of: 10000, Missing: missing, Agents: []AgentJSON{{Index: 5, Address: "10.0.0.1:7070", State: AgentDone}}})
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.Contains(line, "no agent answered") {
			t.Logf("%d bytes: %s", len(line), line)
			if len(line) > 200 || !strings.Contains(line, "0-4, 6-9999") {
				t.Errorf("the missing line, %d bytes: %.300s", len(line), line)
			}
		}
	}
	for _, c := range []struct {
		xs   []int
		want string
	}{
		{[]int{3}, "3"}, {[]int{0, 1, 2, 5, 7, 8}, "0-2, 5, 7-8"}, {[]int{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 19}, "0, 2, 4, 6, 8, 10, 12, 14, and 3 more"},
	} {
		if got := IndexRanges(c.xs, maxRanges); got != c.want {
			t.Errorf("%v: %q, want %q", c.xs, got, c.want)
		}
	}
}
