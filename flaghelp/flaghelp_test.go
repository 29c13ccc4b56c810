package flaghelp

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// bind binds a flag set as the commands do: binders that mark their
// flags, one nested in another, a flag no binder marks, a hidden one.
func bind() *pflag.FlagSet {
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SortFlags = false
	func() {
		defer Group(fs, "Endpoint")()
		fs.String("url", "", "the endpoint")
	}()
	fs.String("own", "", "the command's own")
	func() {
		defer Group(fs, "Load")()
		fs.Int("concurrency", 8, "in flight")
		func() {
			defer Group(fs, "Lengths")()
			fs.Int("prompt-tokens", 256, "prompt")
		}()
		fs.Duration("duration", 0, "how long")
	}()
	fs.Bool("secret-knob", false, "for tests")
	_ = fs.MarkHidden("secret-knob")
	fs.String("slo", "", "objective")
	Mark(fs, "Objectives", "slo", "no-such-flag")
	return fs
}

func TestSections(t *testing.T) {
	var got []string
	for _, s := range Sections(bind()) {
		var names []string
		for _, f := range s.Flags {
			names = append(names, f.Name)
		}
		got = append(got, s.Name+": "+strings.Join(names, " "))
	}
	want := []string{"Endpoint: url", "Flags: own", "Load: concurrency duration", "Lengths: prompt-tokens", "Objectives: slo"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("sections:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if h := Hidden(bind()); len(h) != 1 || h[0].Name != "secret-knob" {
		t.Errorf("hidden: %v", h)
	}
}

func TestUsage(t *testing.T) {
	var b bytes.Buffer
	Usage(&b, "Usage: infertop run [flags]", bind())
	out := b.String()
	for _, want := range []string{"Usage: infertop run [flags]\n\nStart with:\n      --url string ", "\nLoad:\n", "--concurrency int", "\nObjectives:\n      --slo string"} {
		if !strings.Contains(out, want) {
			t.Errorf("the help has no %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secret-knob") {
		t.Errorf("the help shows a hidden flag:\n%s", out)
	}
	// Start with: the first flags only (duration and slo are run's, and
	// come in the order the table gives).
	start := out[strings.Index(out, "Start with:"):strings.Index(out, "Endpoint:")]
	if strings.Index(start, "--url") > strings.Index(start, "--duration") || !strings.Contains(start, "--slo") || strings.Contains(start, "--concurrency") {
		t.Errorf("start with:\n%s", start)
	}
}

type receiver struct {
	bytes.Buffer
	synopsis string
	fs       *pflag.FlagSet
}

func (r *receiver) FlagSet(synopsis string, fs *pflag.FlagSet) { r.synopsis, r.fs = synopsis, fs }

func TestReceiver(t *testing.T) {
	var r receiver
	fs := bind()
	Usage(&r, "Usage: x", fs)
	if r.fs != fs || r.synopsis != "Usage: x" || r.Len() != 0 {
		t.Errorf("the receiver got %q, %v and text %q", r.synopsis, r.fs, r.String())
	}
}
