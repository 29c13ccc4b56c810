package report

import (
	"bytes"
	"encoding/json"
	"errors"
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

// TestMergedWithinReaders: a merged result past what a reader reads is
// written without its parts' own series and results, and says so; one
// still past it is an error, nothing written.
func TestMergedWithinReaders(t *testing.T) {
	pad := json.RawMessage(`{"pad":"` + strings.Repeat("x", 50_000) + `"}`)
	series := &SeriesJSON{}
	inf := InfertopJSON{Manifest: NewManifest("test"), Merged: &MergedJSON{Series: MergedSeries, Runs: []MergedRunJSON{{Name: "a", Series: series}}},
		Agents: &AgentsJSON{Agents: []AgentJSON{{Index: 0, Result: pad}, {Index: 1, Result: pad}}}}
	var b bytes.Buffer
	if err := writeMerged(&b, inf, 1, 40_000, MaxResultValues); err != nil {
		t.Fatal(err)
	}
	var f File
	if err := json.Unmarshal(b.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	if b.Len() > 40_000 || f.Infertop.Merged.Trimmed == "" || f.Infertop.Agents.Agents[0].Result != nil || f.Infertop.Merged.Runs[0].Series != nil {
		t.Errorf("%d bytes, trimmed %q", b.Len(), f.Infertop.Merged.Trimmed)
	}
	if inf.Agents.Agents[0].Result == nil || inf.Merged.Runs[0].Series == nil {
		t.Error("the caller's result was changed")
	}
	b.Reset()
	if err := writeMerged(&b, inf, 1, 500, MaxResultValues); !errors.Is(err, ErrTooLarge) || b.Len() != 0 {
		t.Errorf("past the bound even trimmed: %v, %d bytes written", err, b.Len())
	}
}
