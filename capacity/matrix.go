package capacity

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/slo"
)

// Matrix is a grid of prompt and output lengths: a search (or a
// measurement at the load given) per cell, because the question "how much
// load inside the SLO" has one answer per shape of request.
type Matrix struct {
	Prompts, Outputs []int
}

// ParseMatrix reads 'prompt=64,256,1024;output=128,256,512'. Either list
// may be left out: the knob's value is then the one length (given in
// lengths, as the load's flags set them).
func ParseMatrix(s string, lengths load.Knobs) (Matrix, error) {
	var m Matrix
	bad := func(why string) (Matrix, error) {
		return Matrix{}, fmt.Errorf("bad matrix %q: %s (want 'prompt=64,256;output=128,256')", s, why)
	}
	for _, part := range strings.Split(s, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		key, vals, ok := strings.Cut(part, "=")
		if !ok {
			return bad("no '=' in " + strconv.Quote(part))
		}
		var list *[]int
		limit := 0
		switch strings.TrimSpace(key) {
		case "prompt", "input":
			list, limit = &m.Prompts, load.MaxPromptTokens
		case "output":
			list, limit = &m.Outputs, load.MaxOutputTokens
		default:
			return bad("unknown key " + strconv.Quote(strings.TrimSpace(key)))
		}
		if *list != nil {
			return bad(strings.TrimSpace(key) + " given twice")
		}
		for _, v := range strings.Split(vals, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 || n > limit {
				return bad(fmt.Sprintf("length %q is not within 1..%d", strings.TrimSpace(v), limit))
			}
			*list = append(*list, n)
		}
	}
	if m.Prompts == nil && m.Outputs == nil {
		return bad("no lengths")
	}
	if m.Prompts == nil {
		m.Prompts = []int{lengths.PromptTokens}
	}
	if m.Outputs == nil {
		m.Outputs = []int{lengths.OutputTokens}
	}
	return m, nil
}

// Cells is the number of cells.
func (m Matrix) Cells() int { return len(m.Prompts) * len(m.Outputs) }

// Cell is one cell's result.
type Cell struct {
	Prompt, Output int
	Result         Result
}

// Outcome is everything a capacity run leaves for the reports: one
// search, or a matrix of them.
type Outcome struct {
	Over       Over
	Objectives []slo.Objective
	// Matrix is nil for one search (Cells then holds one).
	Matrix *Matrix
	// Cells are in row order: every output length of the first prompt
	// length, then the next.
	Cells []Cell
	// Stopped says why the run stopped before every cell was done ("":
	// it did not).
	Stopped string
}

// Found reports whether every cell found a load (a fixed-load cell: held).
func (o *Outcome) Found() bool {
	for _, c := range o.Cells {
		if !c.Result.Found {
			return false
		}
	}
	return len(o.Cells) > 0 && o.Stopped == ""
}

// Run runs s for every cell of m in turn, the lengths set at each, or
// with no objectives holds each cell at load (s.Hold's rules) instead.
// On an error the outcome holds the cells finished and Stopped says why.
func (m Matrix) Run(ctx context.Context, eng Engine, snaps <-chan load.Snapshot, s Search, at float64) (*Outcome, error) {
	out := &Outcome{Over: s.withDefaults().Over, Objectives: s.Objectives, Matrix: &m}
	for _, p := range m.Prompts {
		for _, o := range m.Outputs {
			cs := s
			cs.Prompt, cs.Output = p, o
			var res Result
			var err error
			if len(s.Objectives) == 0 {
				res, err = cs.Measure(ctx, eng, snaps, at)
			} else {
				res, err = cs.Run(ctx, eng, snaps)
			}
			res.Prompt, res.Output = p, o
			if len(res.Steps) > 0 || err == nil {
				out.Cells = append(out.Cells, Cell{Prompt: p, Output: o, Result: res})
			}
			if err != nil {
				out.Stopped = err.Error()
				return out, err
			}
		}
	}
	return out, nil
}
