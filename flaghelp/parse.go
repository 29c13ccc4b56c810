package flaghelp

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/pflag"
)

// NewFlagSet makes a command's flag set: its errors returned, never
// printed or exited on (the command says them once), its flags in the
// order bound, and its --help in groups (Usage) after synopsis.
func NewFlagSet(name, synopsis string, stdout io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are printed once, by the command
	fs.SortFlags = false
	fs.Usage = func() { Usage(stdout, synopsis, fs) }
	return fs
}

// Parse parses args: pflag.ErrHelp after -h/--help (the help printed
// once), a bad value in plain words (plainError), a stray argument by
// name.
func Parse(fs *pflag.FlagSet, args []string) error {
	if err := ParseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// ParseArgs is Parse for a command that takes arguments beside its flags
// (fs.Args(), in any place among them): none is refused here.
func ParseArgs(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return errors.New(plainError(err.Error()))
	}
	return nil
}

// plainError says what a number flag wants instead of the strconv
// detail pflag adds to a bad number.
func plainError(msg string) string {
	// Go's own duration errors: "invalid argument "10" for "--duration"
	// flag: time: missing unit in duration "10"".
	durText := regexp.MustCompile(`^invalid argument "([^"]*)" for "(?:-\w, )?(--[\w-]+)" flag: time: (missing unit|invalid duration|unknown unit "([^"]*)")`)
	if m := durText.FindStringSubmatch(msg); m != nil {
		why := "is no duration"
		switch {
		case m[3] == "missing unit":
			why = "needs a unit"
		case m[4] != "":
			why = fmt.Sprintf("has an unknown unit %q", m[4])
		}
		return fmt.Sprintf("%s: %q %s; want e.g. 10s, 500ms or 2m (units ns, us, ms, s, m, h)", m[2], m[1], why)
	}
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
