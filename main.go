// Command infertop is top for an inference endpoint: it puts live load on an
// LLM serving endpoint and shows, second by second, how it answers. With no
// --url it starts an embedded simulated endpoint and watches that.
//
// This file holds the command line; the subcommands are wired in cmd_*.go.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/spf13/pflag"
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

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches a command line and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	var err error
	switch {
	case len(args) > 0 && args[0] == "sim":
		err = runSim(args[1:], stdout, stderr)
	case len(args) > 0 && args[0] == "run":
		err = runHeadless(args[1:], stdout, stderr)
	case len(args) > 0 && args[0] == "ssh":
		err = runSSH(args[1:], stdout, stderr)
	default:
		err = runTUI(args, stdout, stderr)
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, pflag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stderr, "infertop: %v\n", err)
		return 2
	case errors.As(err, new(exitError)):
		var e exitError
		errors.As(err, &e)
		fmt.Fprintf(stderr, "infertop: %v\n", err)
		return e.code
	default:
		fmt.Fprintf(stderr, "infertop: %v\n", err)
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

// parse parses args, printing help on -h/--help.
func parse(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fs.Usage()
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}
