package compare

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sanitize"
)

// OtherGroup is the name of the requests of every group past the named
// ones (probe.MaxGroups), compared with the baseline as one group: the
// probe's name, so the exporter's label and the comparison's agree.
const OtherGroup = probe.OtherGroup

// Groups collects one load's requests by the group that answered each
// (probe.Result.Group, from a --split-by): the newest N per metric and
// group, stamped with the second they finished in, as Samples does for a
// Pair's sides. The first group seen is the baseline; each newer one is
// compared with it, unless the baseline is named (NewGroupsWithBaseline):
// then the group of that name is the baseline whenever it appears. At
// most a fixed number of groups are named; the
// requests of any other go to OtherGroup, so memory stays bounded whatever
// the server sends. Requests without a group (no header, no field: a
// connection refused, a field-less error) are counted, never compared.
// Its methods are safe from any goroutine; Observe is cheap.
type Groups struct {
	mu       sync.Mutex
	stats    []Stat
	n, limit int
	t0       time.Time
	setting  setting
	epoch    int // clearLocked's calls (see Knobs)
	// held narrows each group's sequences by its looks before, keyed
	// by the group's name and the statistic's.
	held     held
	maxPhase int // the engine's newest phase recorded
	// names are the named groups in the order seen (names[0] the
	// baseline), sides their samples, seen their requests (every one,
	// warm-up and resets included); the last of sides and seen is
	// OtherGroup's. A named baseline holds slot 0 from the start, before
	// it answers: no sample ever moves between slots.
	names []string
	named bool
	sides []sideSamples
	seen  []int
	// marks are, per slot, the baseline's tallies when that group's
	// first request of the setting came (nil: none yet): the confidence
	// sequences compare a newer group with the baseline's requests since
	// then, the stretch both served (a new pod ready at minute 10 is not
	// compared with the old pods' first ten minutes).
	marks []*sideSamples
	// noCounts: no sequences judge the groups (SetAnytime(false)), so
	// no group counts its requests per value.
	noCounts bool
	// ungrouped and ungroupedFailed count the requests without a group.
	ungrouped, ungroupedFailed int
}

// NewGroups keeps n samples (0: DefaultSamples) per group of every metric
// stats need, for at most limit named groups (0, or past probe.MaxGroups:
// probe.MaxGroups, the bound the exporter's series share), counting
// seconds from t0.
func NewGroups(stats []Stat, n, limit int, t0 time.Time) *Groups {
	return NewGroupsWithBaseline(stats, n, limit, t0, "")
}

// NewGroupsWithBaseline is NewGroups with the baseline named: the group
// called baseline (a value as probe.Result.Group holds it) is the
// baseline whenever it appears, and the groups seen before it are newer
// ones (a rollout's new pods may answer first, and must still be
// compared with the old). Empty: the first group seen, as NewGroups.
func NewGroupsWithBaseline(stats []Stat, n, limit int, t0 time.Time, baseline string) *Groups {
	if n <= 0 {
		n = DefaultSamples
	}
	if limit <= 0 || limit > probe.MaxGroups {
		limit = probe.MaxGroups
	}
	limit = max(limit, 2) // a baseline and one to compare with
	g := &Groups{stats: stats, n: n, limit: limit, t0: t0,
		sides: []sideSamples{newSideSamples(stats, n, true)}, seen: []int{0}, marks: []*sideSamples{nil}}
	if baseline != "" {
		g.named = true
		g.indexLocked(baseline) // slot 0, before any request
	}
	return g
}

// SetAnytime says whether the groups are judged with the confidence
// sequences, as Samples.SetAnytime: on by default; call it before the
// first Observe.
func (g *Groups) SetAnytime(on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.noCounts = !on
	for i := range g.sides {
		g.sides[i].counting(g.stats, on)
	}
}

// SetKnobs says the knobs are now k: a new setting starts the comparison
// over (the groups keep their names and numbers).
func (g *Groups) SetKnobs(k load.Knobs) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.setting.set(k) {
		g.clearLocked()
	}
}

// Reset forgets every sample; requests that started before at are left
// out when they end. The groups keep their names: the baseline stays the
// baseline.
func (g *Groups) Reset(at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.clearLocked()
	g.setting.since = at
}

func (g *Groups) clearLocked() {
	g.epoch++
	g.held.reset()
	for i := range g.sides {
		g.sides[i].clear()
		g.marks[i] = nil
	}
}

// indexLocked is the slot of group name, naming it if there is room: the
// last slot (OtherGroup's) once limit names are taken.
func (g *Groups) indexLocked(name string) int {
	for i, n := range g.names {
		if n == name {
			return i
		}
	}
	if len(g.names) < g.limit {
		g.names = append(g.names, name)
		i := len(g.names) - 1
		// Named groups take the slots before OtherGroup's, which stays last.
		g.sides = append(g.sides[:i], newSideSamples(g.stats, g.n, !g.noCounts), g.sides[i])
		g.seen = append(g.seen[:i], 0, g.seen[i])
		g.marks = append(g.marks[:i], nil, g.marks[i])
		return i
	}
	return len(g.sides) - 1
}

// Observe counts one finished request, seen at now, in its group.
func (g *Groups) Observe(rec load.Record, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if rec.Group == "" {
		g.ungrouped++
		if !rec.OK() {
			g.ungroupedFailed++
		}
		return
	}
	// Named on its first request, warm-up or not: the baseline is the
	// group that answered first (or holds slot 0 already, when named).
	i := g.indexLocked(rec.Group)
	g.seen[i]++
	ok, restart := g.setting.admit(rec, now, g.maxPhase)
	if !ok {
		return
	}
	if restart {
		g.clearLocked()
	}
	g.maxPhase = max(g.maxPhase, rec.Phase)
	if i > 0 && g.marks[i] == nil {
		g.marks[i] = g.sides[0].mark()
	}
	g.sides[i].record(rec, secondOf(now, g.t0))
}

// Group is one group of a split.
type Group struct {
	// Name is the value that named it (raw, as the server sent it: see
	// Label), OtherGroup for the rest; Index its number in the order
	// seen, the baseline's 1 (0 for OtherGroup).
	Name  string
	Index int
	// Requests are every request it answered (warm-up, resets and knob
	// changes included), failed or not.
	Requests int
	// Figures are the group's own statistics over the samples it holds
	// (the current knob setting's), one per statistic of the split in
	// its order: what a display shows beside each comparison's difference.
	Figures []Figure
}

// Figure is one statistic of one group over the samples it holds:
// milliseconds for a latency, a fraction for the error rate; N the
// samples behind it (0: no value).
type Figure struct {
	Stat  Stat
	Value float64
	N     int
}

// Label is the group as lines show it, sanitised: "group 2 (fp_abc)",
// "other groups".
func (g Group) Label() string {
	if g.Index == 0 {
		return "other groups"
	}
	return fmt.Sprintf("group %d (%s)", g.Index, sanitize.Text(g.Name))
}

// GroupComparison is one newer group compared with the baseline group.
type GroupComparison struct {
	Group Group
	Comparison
}

// Grouping is every newer group compared with the baseline group at one
// moment: what a split's verdict and report are made of.
type Grouping struct {
	// By is the split's spec ("header:X-Backend"), for the reports (a
	// Split's; empty from Groups.Compare).
	By string
	// Baseline is the group seen first, or the one named (Index 0 and no
	// name: none yet; Requests 0: named, and not seen yet).
	Baseline Group
	// Named is true when the baseline was named rather than seen first.
	Named bool
	// Newer are the other named groups in the order seen, then
	// OtherGroup's when it has requests.
	Newer []GroupComparison
	// Ungrouped are the requests no group could be read from, and the
	// failed among them.
	Ungrouped, UngroupedFailed int
	// Anytime says the groups were judged with confidence sequences
	// (Options.Anytime).
	Anytime bool
}

// Compare compares each newer group with the baseline group over the
// samples held now (see judge: only the seconds both groups had requests
// in are paired). Every group's comparison uses o, with the same seed.
// The lock is held only to copy the samples (see copy): the sorting and
// the bootstrap run outside it, so Observe, which the engine's
// aggregator calls, never waits for them.
func (g *Groups) Compare(o Options) Grouping {
	c := g.copySamples(o.Anytime)
	out := Grouping{Named: c.named, Ungrouped: c.ungrouped, UngroupedFailed: c.ungroupedFailed, Anytime: o.Anytime}
	if len(c.names) == 0 {
		return out
	}
	out.Baseline = Group{Name: c.names[0], Index: 1, Requests: c.seen[0], Figures: figures(g.stats, &c.slots[0])}
	for i := 1; i < len(c.seen); i++ {
		grp := Group{Name: OtherGroup, Requests: c.seen[i]}
		if i < len(c.names) {
			grp.Name, grp.Index = c.names[i], i+1
		} else if c.seen[i] == 0 {
			continue // no other group yet
		}
		grp.Figures = figures(g.stats, &c.slots[i])
		// judge drops and sorts the samples it is given: each comparison
		// gets its own, and the baseline's are compared more than once.
		data := func(st Stat) [2][]sample {
			return [2][]sample{slices.Clone(c.slots[0].of(st)), slices.Clone(c.slots[i].of(st))}
		}
		tallies := func(st Stat) [2]tally { return c.slots[i].tallies[slices.Index(g.stats, st)] }
		name := grp.Name
		narrow := func(st Stat, lo, hi float64) (float64, float64) {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.epoch != c.epoch { // started over while judged
				return lo, hi
			}
			return g.held.narrow(name+"\x00"+st.Name, lo, hi)
		}
		cmp := compareStats(g.stats, o, true, [2]string{out.Baseline.Label(), grp.Label()}, data, tallies, narrow)
		out.Newer = append(out.Newer, GroupComparison{Group: grp, Comparison: cmp})
	}
	return out
}

// groupsCopy is what Compare reads of the groups at one moment.
type groupsCopy struct {
	epoch                      int
	names                      []string
	seen                       []int
	named                      bool
	ungrouped, ungroupedFailed int
	slots                      []slotCopy
}

// slotCopy is one slot's samples: a slice per ring (nil: no ring); and
// per statistic the tallies of its comparison with the baseline (the
// baseline's since its mark, its own), for the confidence sequences.
type slotCopy struct {
	lat     [load.NumMetrics][]sample
	errs    []sample
	inv     []sample
	tallies [][2]tally
}

// of is the samples statistic st reads.
func (s *slotCopy) of(st Stat) []sample {
	switch {
	case st.Invalid:
		return s.inv
	case st.ErrorRate:
		return s.errs
	}
	return s.lat[st.Metric]
}

// copySamples copies the groups' names, counts and samples under the
// lock: a copy of every ring into one slice, no more (a ring is shared by
// the statistics of its metric, so it is copied once). The slice is made
// before, outside the lock, as large as the samples were a moment ago
// (a group named since then only makes the copy grow it).
func (g *Groups) copySamples(anytime bool) groupsCopy {
	g.mu.Lock()
	n := g.heldLocked()
	g.mu.Unlock()
	buf := make([]sample, 0, n)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.copyLocked(buf, anytime)
}

// copyLocked is copySamples' copy, into buf (grown if short), with the
// confidence sequences' tallies when anytime.
func (g *Groups) copyLocked(buf []sample, anytime bool) groupsCopy {
	c := groupsCopy{epoch: g.epoch, names: slices.Clone(g.names), seen: slices.Clone(g.seen), named: g.named,
		ungrouped: g.ungrouped, ungroupedFailed: g.ungroupedFailed, slots: make([]slotCopy, len(g.sides))}
	take := func(r *ring) []sample {
		if r == nil {
			return nil
		}
		at := len(buf)
		buf = append(buf, r.items()...)
		return buf[at:len(buf):len(buf)] // capped: no append reaches the next ring's
	}
	for i := range g.sides {
		sd := &g.sides[i]
		c.slots[i].errs = take(sd.errs)
		c.slots[i].inv = take(sd.inv)
		for m, r := range sd.lat {
			c.slots[i].lat[m] = take(r)
		}
		if i == 0 || !anytime {
			continue
		}
		for _, st := range g.stats {
			c.slots[i].tallies = append(c.slots[i].tallies, [2]tally{g.sides[0].tally(st, g.marks[i]), sd.tally(st, nil)})
		}
	}
	return c
}

// heldLocked counts the samples of every ring of every slot.
func (g *Groups) heldLocked() int {
	n := 0
	for i := range g.sides {
		sd := &g.sides[i]
		n += len(sd.errs.items())
		if sd.inv != nil {
			n += len(sd.inv.items())
		}
		for _, r := range sd.lat {
			if r != nil {
				n += len(r.items())
			}
		}
	}
	return n
}

// figures are a slot's statistics over the samples copied of it, each as
// judge computes a side's (statOf, every sample weighed once).
func figures(stats []Stat, s *slotCopy) []Figure {
	out := make([]Figure, 0, len(stats))
	for _, st := range stats {
		f := Figure{Stat: st}
		if items := s.of(st); len(items) > 0 {
			d := sideData{v: make([]float64, len(items)), blk: make([]int32, len(items)), count: []int{len(items)}}
			for j, s := range items {
				d.v[j] = s.v
			}
			slices.Sort(d.v)
			f.Value, _ = statOf(st, &d, []int{1})
			f.N = len(items)
		}
		out = append(out, f)
	}
	return out
}

// Breached reports whether any newer group breached a regression with
// confidence.
func (gr Grouping) Breached() bool {
	for _, c := range gr.Newer {
		if c.Breached() {
			return true
		}
	}
	return false
}

// Line is the split in one line, for a live display: each newer group's
// Line, or what is still missing ("one group so far: …").
func (gr Grouping) Line() string {
	switch {
	case gr.Baseline.Index == 0:
		return fmt.Sprintf("no group seen yet (%d requests without %s)", gr.Ungrouped, gr.what())
	case gr.Baseline.Requests == 0 && len(gr.Newer) == 0:
		return fmt.Sprintf("waiting for the baseline %s: no group seen yet (%d requests without %s)", gr.Baseline.Label(), gr.Ungrouped, gr.what())
	case gr.Baseline.Requests == 0:
		var parts []string
		for _, c := range gr.Newer {
			parts = append(parts, fmt.Sprintf("%s %d", c.Group.Label(), c.Group.Requests))
		}
		return fmt.Sprintf("waiting for the baseline %s: nothing to compare yet (requests: %s)", gr.Baseline.Label(), strings.Join(parts, ", "))
	case len(gr.Newer) == 0:
		return fmt.Sprintf("one group so far: %s, %d requests", gr.Baseline.Label(), gr.Baseline.Requests)
	}
	var parts []string
	for _, c := range gr.Newer {
		parts = append(parts, c.Line())
	}
	return strings.Join(parts, " | ")
}

// what is the split's source as a sentence says it: "the header
// X-Backend", "the field system_fingerprint".
func (gr Grouping) what() string {
	kind, name, ok := strings.Cut(gr.By, ":")
	if !ok {
		return "a group"
	}
	return "the " + kind + " " + sanitize.Text(name)
}

// WriteTable writes the split: its groups, then each newer group's
// comparison table with the baseline group, then the verdict.
func (gr Grouping) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Split by %s\n", sanitize.Text(gr.By))
	if gr.Baseline.Index == 0 {
		fmt.Fprintf(&b, "  no request carried %s: nothing to compare\n", gr.what())
	} else {
		named := ""
		if gr.Named {
			named = " (named by --baseline-group)"
		}
		fmt.Fprintf(&b, "  baseline: %s, %d requests%s\n", gr.Baseline.Label(), gr.Baseline.Requests, named)
		for _, c := range gr.Newer {
			fmt.Fprintf(&b, "  newer:    %s, %d requests\n", c.Group.Label(), c.Group.Requests)
		}
	}
	if gr.Ungrouped > 0 {
		fmt.Fprintf(&b, "  without a group: %d requests (%d failed), left out\n", gr.Ungrouped, gr.UngroupedFailed)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if gr.Baseline.Requests == 0 { // a named baseline that never answered: nothing was compared
		_, err := fmt.Fprintf(w, "\n%s\n", gr.Line())
		return err
	}
	for _, c := range gr.Newer {
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
		if err := c.WriteTable(w, c.side(0), c.side(1)); err != nil {
			return err
		}
	}
	if len(gr.Newer) == 0 {
		_, err := fmt.Fprintf(w, "\n%s\n", gr.Line())
		return err
	}
	return nil
}
