package load

import "fmt"

// A share is the part of a load that one of n machines sends (infertop
// agent --index i --of n): every i-th item of n, counted from i. Strided
// rather than in contiguous blocks, so that the n shares' first k items
// together are the whole's first n·k: a dataset cut short by a duration
// or a request count sends, over all the agents, the prompts one machine
// would have sent, and a trace's arrivals stay spread over its whole
// span on every agent (a block would give each agent one stretch of the
// trace's time, idle for the rest).

// stride is the items of s at i, i+n, i+2n, ...
func stride[T any](s []T, i, n int) []T {
	out := make([]T, 0, (len(s)-i+n-1)/n)
	for p := i; p < len(s); p += n {
		out = append(out, s[p])
	}
	return out
}

// checkShare refuses a share that is none: i outside 0..n-1.
func checkShare(i, n int) error {
	if n < 1 || i < 0 || i >= n {
		return fmt.Errorf("index %d of %d is not a share", i, n)
	}
	return nil
}

// Share is the part of the dataset share i of n sends: the prompts at
// positions i, i+n, ... of its seeded order, and so the conversations,
// so no two shares send the same one and the n shares together are the
// dataset. The whole's seed has shuffled it already (LoadDataset), the
// same on every machine; each share cycles through its own part in that
// order. A share left with nothing is refused (*SettingError,
// SettingDataset).
func (d *Dataset) Share(i, n int) (*Dataset, error) {
	if err := checkShare(i, n); err != nil {
		return nil, &SettingError{SettingDataset, err}
	}
	if i >= len(d.items) || len(d.convs) > 0 && i >= len(d.convs) {
		return nil, &SettingError{SettingDataset, fmt.Errorf("%d prompts split %d ways leave share %d none", len(d.items), n, i)}
	}
	out := &Dataset{items: stride(d.items, i, n)}
	if len(d.convs) > 0 {
		out.convs = stride(d.convs, i, n)
	}
	return out, nil
}

// Share is the part of the trace share i of n replays: its arrivals i,
// i+n, ..., each at its own time, over the trace's span, so the n shares'
// arrivals merged are the trace's. The lengths knobs start at the whole
// trace's means, the same on every share (the lengths then scale alike,
// and shares of one load show one load), and the shared prefix blocks of
// a Mooncake trace are written from the whole's seed, so two shares'
// requests naming one block send it byte for byte alike, as one machine
// would. A share left with no arrival is refused (*SettingError,
// SettingTrace).
func (t *Trace) Share(i, n int, seed uint64) (*Trace, error) {
	if err := checkShare(i, n); err != nil {
		return nil, &SettingError{SettingTrace, err}
	}
	if i >= len(t.Entries) {
		return nil, &SettingError{SettingTrace, fmt.Errorf("%d arrivals split %d ways leave share %d none", len(t.Entries), n, i)}
	}
	out := *t
	out.whole = &wholeTrace{seed: seed}
	out.whole.input, out.whole.output, _ = t.means()
	out.Entries = stride(t.Entries, i, n)
	return &out, nil
}

// wholeTrace is what a share of a trace keeps of the whole: its mean
// lengths and the seed its prefix blocks are written from.
type wholeTrace struct {
	input, output int
	seed          uint64
}
