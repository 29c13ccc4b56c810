package session

import (
	"io"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/load"
)

// settings keeps each knob setting's last live verdict beside a
// comparison that starts over at every new setting (compare.Verdicts),
// for a Pair and a Split alike.
type settings struct {
	v compare.Verdicts
	// knobs is the comparison's setting and its restarts
	// (compare.Samples.Knobs, compare.Groups.Knobs).
	knobs func() (load.Knobs, int, bool)
}

// look makes one live comparison (judge, which returns its line) and
// keeps the line under the setting it was made under, unless the
// comparison started over while it was made.
func (st *settings) look(judge func() string) {
	k, e, ok := st.knobs()
	line := judge()
	if _, e2, ok2 := st.knobs(); ok && ok2 && e == e2 {
		st.v.Keep(k, line)
	}
}

// table is write, then the verdicts of the settings before the current
// one.
func (st *settings) table(write func(io.Writer) error) func(io.Writer) error {
	return func(w io.Writer) error {
		if err := write(w); err != nil {
			return err
		}
		k, _, _ := st.knobs()
		return compare.WriteSettings(w, st.v.Others(k))
	}
}
