// Package version says which infertop a binary is: the version set at
// build time (make build's -ldflags "-X main.version=..."), else the
// module's version (go install module@v1.2.3), else the VCS revision a
// build from a checkout records.
package version

import "runtime/debug"

// Of is the binary's version: set, when the build set one, else what its
// build information says; "dev" with neither.
func Of(set string) string {
	if set != "" {
		return set
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return FromBuild(bi)
}

// FromBuild is the version bi says: the module's (go install
// module@v1.2.3), else "dev-" and the first 12 digits of the VCS revision,
// "-dirty" when the checkout had changes; "dev" with neither.
func FromBuild(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "dev"
	}
	v := "dev-" + rev[:min(len(rev), 12)]
	if modified == "true" {
		v += "-dirty"
	}
	return v
}
