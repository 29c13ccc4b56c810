// Command infertop is top for an inference endpoint: it puts live load on an
// LLM serving endpoint and shows, second by second, how it answers. With no
// --url it starts an embedded simulated endpoint and watches that.
//
// The root package is wiring only: main.go dispatches the commands,
// flags.go turns flags (grouped by concern) into a runner.Config, and each
// cmd_*.go is one command following a runner (package runner owns the
// load's life).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/pflag"

	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/runner"
)

// version is set at build time with -ldflags "-X main.version=..."; else
// the module version is used.
var version = ""

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// usageError is a bad command line: one line on stderr, exit code 2.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// exitError ends a command with a given exit code.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// app is what every command runs through: where it writes, and the hooks
// the tests set (nil: none).
type app struct {
	stdout, stderr io.Writer
	// wrapModel wraps the dashboard's model (to make it panic, in tests).
	wrapModel func(tea.Model) tea.Model
	// wrapDo wraps every request (to make one panic in a worker, in tests).
	wrapDo func(runner.Do) runner.Do
	// find is the dashboard's capacity search (runTUI's flags: the f key's
	// settings, --find-max's objectives); nil: the defaults.
	find *capacity.Search
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs a command line with no hooks and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	return (&app{stdout: stdout, stderr: stderr}).run(args)
}

// run dispatches a command line and returns the exit code.
func (a *app) run(args []string) int {
	var err error
	switch {
	case len(args) > 0 && args[0] == "sim":
		err = a.runSim(args[1:])
	case len(args) > 0 && args[0] == "run":
		err = a.runHeadless(args[1:])
	case len(args) > 0 && args[0] == "ssh":
		err = a.runSSH(args[1:])
	case len(args) > 0 && args[0] == "report":
		err = a.runReport(args[1:])
	default:
		err = a.runTUI(args)
	}
	var exit exitError
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintf(a.stderr, "infertop: %v\n", err)
		return 2
	case errors.As(err, &exit):
		fmt.Fprintf(a.stderr, "infertop: %v\n", err)
		return exit.code
	default:
		fmt.Fprintf(a.stderr, "infertop: %v\n", err)
		return 1
	}
}

// newFlagSet makes a flag set that reports errors instead of exiting.
func newFlagSet(name, synopsis string, stdout io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are printed once, by run
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprintf(stdout, "%s\n\nFlags:\n%s", synopsis, fs.FlagUsages())
	}
	return fs
}

// plainFlagError says what a number flag wants instead of the strconv
// detail pflag adds to a bad number.
func plainFlagError(msg string) string {
	strconvText := regexp.MustCompile(`: strconv\.Parse\w+: parsing "[^"]*": (invalid syntax|value out of range)$`)
	if m := strconvText.FindStringSubmatch(msg); m != nil {
		want := ": want a number"
		if m[1] == "value out of range" {
			want = ": the number is out of range"
		}
		if strings.Contains(msg, `"--rate"`) {
			want += " of requests per second, e.g. 10 or 2.5"
		}
		return msg[:len(msg)-len(m[0])] + want
	}
	return msg
}

// parse parses args; pflag itself prints the help on -h/--help (once).
func parse(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError{errors.New(plainFlagError(err.Error()))}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// start starts the load cfg describes, with the app's hooks and notes on
// stderr; ctx bounds only the start (detection, model discovery).
func (a *app) start(ctx context.Context, cfg runner.Config) (*runner.Runner, error) {
	cfg.Notes, cfg.WrapDo = a.stderr, a.wrapDo
	r, err := runner.Start(ctx, cfg)
	if err != nil {
		return nil, startError(err)
	}
	return r, nil
}
