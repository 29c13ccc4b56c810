// Package flaghelp lays out a command's flags by what they belong to, for
// its --help and for the generated flag reference (docs/reference/flags,
// tools/flagref): each flag binder marks the flags it binds with its group
// (a pflag annotation), and Usage prints them group by group, after the
// few a newcomer needs first. It imports pflag only, so any binder can
// mark its flags without linking anything of infertop.
package flaghelp

import (
	"fmt"
	"io"
	"slices"

	"github.com/spf13/pflag"
)

// annotation is the pflag annotation that names a flag's group.
const annotation = "infertop_group"

// Other is the section of the flags no binder marked: a command's own
// (report's -o, sim's --addr).
const Other = "Flags"

// Group marks the flags bound to fs from now until the returned function
// is called as belonging to the group name; a flag an inner binder marked
// keeps its group. A binder's first line:
//
//	defer flaghelp.Group(fs, "Endpoint: where the load goes")()
func Group(fs *pflag.FlagSet, name string) func() {
	before := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { before[f.Name] = true })
	return func() {
		fs.VisitAll(func(f *pflag.Flag) {
			if !before[f.Name] && GroupOf(f) == "" {
				_ = fs.SetAnnotation(f.Name, annotation, []string{name})
			}
		})
	}
}

// Mark marks the named flags of fs as belonging to group (a name fs does
// not have is passed over).
func Mark(fs *pflag.FlagSet, group string, names ...string) {
	for _, n := range names {
		_ = fs.SetAnnotation(n, annotation, []string{group})
	}
}

// GroupOf is the group f was marked with, "" when none.
func GroupOf(f *pflag.Flag) string {
	if g := f.Annotations[annotation]; len(g) > 0 {
		return g[0]
	}
	return ""
}

// Section is a group and its flags, in the order they were bound.
type Section struct {
	Name  string
	Flags []*pflag.Flag
}

// Sections are fs's visible flags by group, the groups in the order each
// was first bound, the flags no binder marked under Other. Hidden flags
// (for tests) are left out: Hidden lists them.
func Sections(fs *pflag.FlagSet) []Section {
	var out []Section
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		g := GroupOf(f)
		if g == "" {
			g = Other
		}
		i := slices.IndexFunc(out, func(s Section) bool { return s.Name == g })
		if i < 0 {
			out = append(out, Section{Name: g})
			i = len(out) - 1
		}
		out[i].Flags = append(out[i].Flags, f)
	})
	return out
}

// Hidden are fs's hidden flags (they exist for tests, and --help leaves
// them out).
func Hidden(fs *pflag.FlagSet) []*pflag.Flag {
	var out []*pflag.Flag
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			out = append(out, f)
		}
	})
	return out
}

// first are, for each command with many flags (its flag set's name),
// the flags a newcomer needs first; a command of a few flags has none.
var first = map[string][]string{
	"infertop": {"url", "model", "concurrency"},
	"run":      {"url", "duration", "slo"},
	"ssh":      {"listen", "controllers", "allow-any-key"},
	"sim":      {"addr", "preset"},
	"agent":    {"index", "of", "token-file"},
	"watch":    {"target", "headless", "regression"},
}

// FirstNames are the names of the flags a newcomer of the command (its
// flag set's name) needs first.
func FirstNames(command string) []string { return slices.Clone(first[command]) }

// First are the flags of fs a newcomer needs first, in that order.
func First(fs *pflag.FlagSet) []*pflag.Flag {
	var out []*pflag.Flag
	for _, n := range first[fs.Name()] {
		if f := fs.Lookup(n); f != nil && !f.Hidden {
			out = append(out, f)
		}
	}
	return out
}

// Receiver takes a command's flag set instead of its help text: a writer
// given to Usage that is a Receiver gets the flag set (the flag
// reference's generator collects every command's so).
type Receiver interface {
	FlagSet(synopsis string, fs *pflag.FlagSet)
}

// Usage writes a command's help to w: the synopsis, the flags to start
// with, then every group of flags.
func Usage(w io.Writer, synopsis string, fs *pflag.FlagSet) {
	if r, ok := w.(Receiver); ok {
		r.FlagSet(synopsis, fs)
		return
	}
	fmt.Fprintf(w, "%s\n", synopsis)
	if fl := First(fs); len(fl) > 0 {
		fmt.Fprintf(w, "\nStart with:\n%s", usages(fs, fl))
	}
	for _, s := range Sections(fs) {
		fmt.Fprintf(w, "\n%s:\n%s", s.Name, usages(fs, s.Flags))
	}
}

// usages is pflag's usage lines of flags, aligned among themselves.
func usages(fs *pflag.FlagSet, flags []*pflag.Flag) string {
	set := pflag.NewFlagSet(fs.Name(), pflag.ContinueOnError)
	set.SortFlags = false
	for _, f := range flags {
		set.AddFlag(f)
	}
	return set.FlagUsages()
}
