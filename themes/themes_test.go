package themes

import (
	"io"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

func TestPalettes(t *testing.T) {
	colour := lipgloss.NewRenderer(io.Discard)
	colour.SetColorProfile(termenv.TrueColor)
	plain := lipgloss.NewRenderer(io.Discard)
	plain.SetColorProfile(termenv.Ascii)
	for _, name := range Names() {
		p, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := New(colour, p).Bad.Render("x"); got == "x" {
			t.Errorf("%s: no colour on a true-colour terminal", name)
		}
		// NO_COLOR: an ASCII profile renders no colour escapes at all.
		if got := New(plain, p).P99.Render("x"); got != "x" {
			t.Errorf("%s: %q on an ASCII terminal", name, got)
		}
	}
	if _, err := Lookup("pink"); err == nil {
		t.Error("unknown palette found")
	}
}
