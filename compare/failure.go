package compare

// GateKind is how a regression's gate came out.
type GateKind int

// The kinds of a gate. Only HeldGate passes: a regression with nothing
// measured never passes.
const (
	// HeldGate: the newer side is no worse than the regression allows.
	HeldGate GateKind = iota
	// Breached: it is worse than the regression allows, with confidence.
	Breached
	// NotJudged: too few requests to say.
	NotJudged
)

// String is the kind as a gate's line says it.
func (k GateKind) String() string {
	switch k {
	case Breached:
		return "breached"
	case NotJudged:
		return "not judged"
	}
	return "held"
}

// Failure is a regression's gate that did not pass.
type Failure struct {
	// Expr is the regression as given; Group the newer group's label in
	// a split ("" in a pair).
	Expr, Group string
	// Kind is Breached or NotJudged.
	Kind GateKind
	// Detail says why, for a person.
	Detail string
}

// String is the failure in a line: "regression EXPR: breached: DETAIL
// (GROUP)".
func (f Failure) String() string {
	s := "regression " + f.Expr + ": " + f.Kind.String() + ": " + f.Detail
	if f.Group != "" {
		s += " (" + f.Group + ")"
	}
	return s
}

// failure is g as a Failure of group, if it did not pass.
func (g Gate) failure(group string) (Failure, bool) {
	k := g.Kind()
	return Failure{Expr: g.Regression.Expr, Group: group, Kind: k, Detail: g.detail()}, k != HeldGate
}

// Failures are the comparison's gates that did not pass: breached with
// confidence, or never judged.
func (c Comparison) Failures() []Failure {
	var out []Failure
	for _, g := range c.Gates {
		if f, ok := g.failure(""); ok {
			out = append(out, f)
		}
	}
	return out
}

// Breaches are the comparison's gates breached with confidence.
func (c Comparison) Breaches() []Failure {
	return only(c.Failures(), Breached)
}

// Failures are a split's gates that did not pass: every breach, in any
// newer group; and each of regs that no newer group could judge (too few
// requests in all, or no newer group at all: no gate passed), said with
// the last newer group's reason (or the split's line when there is none).
// A group too small to judge beside one that was judged (a pod that came
// and went, the "other groups") fails nothing: the regression was judged.
func (gr Grouping) Failures(regs []Regression) []Failure {
	var out []Failure
	judged := map[string]bool{}
	unjudged := map[string]Failure{}
	for _, c := range gr.Newer {
		for _, g := range c.Gates {
			f, failed := g.failure(c.Group.Label())
			switch {
			case !failed:
				judged[f.Expr] = true
			case f.Kind == Breached:
				judged[f.Expr] = true
				out = append(out, f)
			default:
				unjudged[f.Expr] = f
			}
		}
	}
	for _, r := range regs {
		if judged[r.Expr] {
			continue
		}
		f, ok := unjudged[r.Expr]
		if !ok {
			f = Failure{Expr: r.Expr, Kind: NotJudged, Detail: gr.Line()}
		}
		out = append(out, f)
	}
	return out
}

// Breaches are the split's gates breached with confidence, in every
// newer group.
func (gr Grouping) Breaches() []Failure {
	return only(gr.Failures(nil), Breached)
}

// only is the failures of kind k.
func only(fs []Failure, k GateKind) []Failure {
	var out []Failure
	for _, f := range fs {
		if f.Kind == k {
			out = append(out, f)
		}
	}
	return out
}
