package main

import (
	"bytes"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/flaghelp"
	"github.com/infertop/infertop/tools/flagref"
)

var update = flag.Bool("update", false, "write docs/reference/flags from the commands' flag sets")

// flagSets is a writer that takes a command's flag set where its --help
// would print it (a flaghelp.Receiver).
type flagSets struct {
	bytes.Buffer
	synopsis string
	fs       *pflag.FlagSet
}

func (r *flagSets) FlagSet(synopsis string, fs *pflag.FlagSet) { r.synopsis, r.fs = synopsis, fs }

// commandFlags are every command's flag sets, as each binds them: its
// --help run with a flaghelp.Receiver for a terminal.
func commandFlags(t *testing.T) []flagref.Command {
	t.Helper()
	names := append([]string{""}, slices.Sorted(maps.Keys((&app{}).commands()))...)
	var cmds []flagref.Command
	for _, name := range names {
		var r flagSets
		var errb bytes.Buffer
		args := []string{"--help"}
		if name != "" {
			args = []string{name, "--help"}
		}
		if code := (&app{stdout: &r, stderr: &errb}).run(args); code != 0 || r.fs == nil {
			t.Fatalf("infertop %s --help: exit %d, no flag set (stderr %q)", name, code, errb.String())
		}
		cmds = append(cmds, flagref.Command{Name: name, Synopsis: r.synopsis, Flags: r.fs})
	}
	return cmds
}

// TestFlagReference holds docs/reference/flags to the flags the commands
// bind: the pages regenerated from them (tools/flagref) equal the
// committed ones, and every flag of every command is on its page.
// go test -run TestFlagReference . -update writes them.
func TestFlagReference(t *testing.T) {
	// The ssh server's key files default under the home folder: a fixed
	// one, written ~ on the page, so that the pages read alike anywhere.
	t.Setenv("HOME", "/home/you")
	t.Setenv("XDG_CONFIG_HOME", "")
	cmds := commandFlags(t)
	pages := flagref.Pages(cmds, "/home/you")
	dir := filepath.Join("docs", "reference", "flags")
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		old, _ := filepath.Glob(filepath.Join(dir, "*.md"))
		for _, f := range old {
			if _, ok := pages[filepath.Base(f)]; !ok {
				os.Remove(f)
			}
		}
		for name, b := range pages {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	committed, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	for _, f := range committed {
		if _, ok := pages[filepath.Base(f)]; !ok {
			t.Errorf("%s is no command's page (go test -run TestFlagReference . -update)", f)
		}
	}
	for name, want := range pages {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs from the commands' flags (go test -run TestFlagReference . -update): %v", filepath.Join(dir, name), err)
		}
	}
	for _, c := range cmds {
		page := string(pages[c.File()])
		c.Flags.VisitAll(func(f *pflag.Flag) {
			if !regexp.MustCompile("(`|`-[a-zA-Z], )--" + regexp.QuoteMeta(f.Name) + "[ `]").MatchString(page) {
				t.Errorf("%s: --%s is not on its page", c.Title(), f.Name)
			}
		})
		names := flaghelp.FirstNames(c.Flags.Name())
		if got := len(flaghelp.First(c.Flags)); got != len(names) || c.Name != "report" && c.Name != "merge" && c.Name != "compare" && got < 2 {
			t.Errorf("%s: its help starts with %d of the flags %v", c.Title(), got, names)
		}
	}
}
