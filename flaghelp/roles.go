package flaghelp

import (
	"slices"

	"github.com/spf13/pflag"
)

// RoleAnnotation is the pflag annotation a binder marks its flags with to
// say what they are to a follower of agents (run --agents): its values
// are the roles below. The binders mark their own flags where they bind
// them; fleet/fleetflag reads the marks to refuse what a follower does
// not take. It lives here, beside the groups, so that a binder marks its
// flags without linking the follower.
const RoleAnnotation = "infertop/agents"

// The roles of a flag to a follower of agents.
const (
	// Taken: the follower takes it with --agents (an objective, an
	// output, a search's step).
	Taken = "taken"
	// Only: it means nothing without --agents (the follower's own).
	Only = "only"
	// Judging: it judges a comparison, so it needs --agents-compare.
	Judging = "judging"
	// Searching: it starts a capacity search, which does not go with
	// --agents-compare yet (as with --compare from one machine).
	Searching = "searching"
)

// Roles marks the flags names of fs (already bound) with roles.
func Roles(fs *pflag.FlagSet, roles []string, names ...string) {
	for _, n := range names {
		fl := fs.Lookup(n)
		if fl == nil {
			panic("flaghelp: no flag " + n + " to mark") // a binder's mistake, found by its first test
		}
		if fl.Annotations == nil {
			fl.Annotations = map[string][]string{}
		}
		fl.Annotations[RoleAnnotation] = append(fl.Annotations[RoleAnnotation], roles...)
	}
}

// Follower marks names as flags a follower of agents takes.
func Follower(fs *pflag.FlagSet, names ...string) { Roles(fs, []string{Taken}, names...) }

// HasRole says fl is marked with role.
func HasRole(fl *pflag.Flag, role string) bool {
	return slices.Contains(fl.Annotations[RoleAnnotation], role)
}
