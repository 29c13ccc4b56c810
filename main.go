// Command infertop is top for an inference endpoint: it puts live load on an
// LLM serving endpoint and shows, second by second, how it answers. With no
// --url it starts an embedded simulated endpoint and watches that.
//
// The root package is wiring only: main.go dispatches from a table of
// commands, each cmd_*.go is one command with its flag set, flags.go joins
// the flag binders of the configuration's owners (runflag, loadflag,
// probeflag, simflag) into a runner.Config; package session owns the load
// of every kind (its start, its follower, its epilogue, its exit code),
// package dashboard its dashboard.
package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agnivade/levenshtein"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/pflag"

	"github.com/infertop/infertop/flaghelp"
	"github.com/infertop/infertop/runner"
	ver "github.com/infertop/infertop/version"
)

// version is set at build time with -ldflags "-X main.version=..." (make
// build sets it from git describe); else package version says.
var version = ""

func versionString() string { return ver.Of(version) }

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

// app is the process's state every command runs through, injected (k6's
// GlobalState is the model): where it writes, the terminal it reads, the
// environment and the signals, and the hooks the tests set. A nil field
// is the process's own.
type app struct {
	stdout, stderr io.Writer
	// stdin is the dashboard's terminal input (nil: os.Stdin).
	stdin *os.File
	// getenv reads the environment (nil: os.Getenv).
	getenv func(string) string
	// signals subscribes to the interrupts, SIGINT and SIGTERM (nil: the
	// process's own, through os/signal).
	signals func() (<-chan os.Signal, func())
	// reportTimeout bounds a run's last reports, saveTimeout an s key's
	// save (0: the defaults).
	reportTimeout, saveTimeout time.Duration
	// wrapModel wraps the dashboard's model (to make it panic, in tests).
	wrapModel func(tea.Model) tea.Model
	// wrapDo wraps every request (to make one panic in a worker, in tests).
	wrapDo func(runner.Do) runner.Do
	// logMu keeps logf's lines whole.
	logMu sync.Mutex
}

// logf prints a line on stderr from any goroutine ("infertop " and the
// line): an agent's, a follower's notes.
func (a *app) logf(format string, args ...any) {
	a.logMu.Lock()
	defer a.logMu.Unlock()
	fmt.Fprintf(a.stderr, "infertop "+format+"\n", args...)
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs a command line with no hooks and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	return (&app{stdout: stdout, stderr: stderr}).run(args)
}

// commands are infertop's commands by name; the dashboard is the one
// without a name.
func (a *app) commands() map[string]func([]string) error {
	return map[string]func([]string) error{
		"run":     a.runHeadless,
		"sim":     a.runSim,
		"ssh":     a.runSSH,
		"report":  a.runReport,
		"merge":   a.runMerge,
		"compare": a.runCompare,
		"agent":   a.runAgent,
		"watch":   a.runWatch,
	}
}

// run dispatches a command line and returns the exit code.
func (a *app) run(args []string) int {
	cmd := a.runTUI
	if len(args) > 0 {
		if c, ok := a.commands()[args[0]]; ok {
			cmd, args = c, args[1:]
		} else if args[0] == "help" {
			cmd, args = a.runTUI, []string{"--help"}
		} else if !strings.HasPrefix(args[0], "-") {
			cmd = func([]string) error { return a.unknownCommand(args[0]) }
		}
	}
	err := cmd(args)
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

// unknownCommand is a first word that names no command: a typo of one
// (the one it is nearest to, by edits), or a stray argument.
func (a *app) unknownCommand(word string) error {
	names := slices.Sorted(maps.Keys(a.commands()))
	best, bestD := "", 3 // a typo is at most two edits away
	for _, n := range names {
		if d := levenshtein.ComputeDistance(word, n); d < bestD {
			best, bestD = n, d
		}
	}
	if best != "" {
		return usagef("unknown command %q: did you mean %q? (commands: %s; infertop --help)", word, best, strings.Join(names, ", "))
	}
	return usagef("unknown command %q (commands: %s, or flags for the dashboard; infertop --help)", word, strings.Join(names, ", "))
}

// env reads the environment variable k.
func (a *app) env(k string) string {
	if a.getenv != nil {
		return a.getenv(k)
	}
	return os.Getenv(k)
}

// input is the terminal the dashboard reads.
func (a *app) input() *os.File {
	if a.stdin != nil {
		return a.stdin
	}
	return os.Stdin
}

// interrupts subscribes to SIGINT and SIGTERM until stop.
func (a *app) interrupts() (sigs <-chan os.Signal, stop func()) {
	if a.signals != nil {
		return a.signals()
	}
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	return ch, func() { signal.Stop(ch) }
}

// newFlagSet makes a flag set that reports errors instead of exiting,
// its --help in groups (flaghelp).
func newFlagSet(name, synopsis string, stdout io.Writer) *pflag.FlagSet {
	return flaghelp.NewFlagSet(name, synopsis, stdout)
}

// parse parses args; pflag itself prints the help on -h/--help (once).
// Any other error is a usage error.
func parse(fs *pflag.FlagSet, args []string) error {
	return usageOf(flaghelp.Parse(fs, args))
}

// parseArgs is parse for a command that takes arguments (watch's
// targets): they are left in fs.Args().
func parseArgs(fs *pflag.FlagSet, args []string) error {
	return usageOf(flaghelp.ParseArgs(fs, args))
}

// usageOf is a parse's error as a usage error; help and nil as they are.
func usageOf(err error) error {
	if err == nil || errors.Is(err, pflag.ErrHelp) {
		return err
	}
	return usageError{err}
}
