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

// TestColoursConvertedOnce: the styles built for a 256-, a 16-colour and
// a true-colour terminal draw exactly what lipgloss draws from the hex
// colour (converting it on every Render); only the conversion moved.
func TestColoursConvertedOnce(t *testing.T) {
	for _, prof := range []termenv.Profile{termenv.ANSI256, termenv.ANSI, termenv.TrueColor} {
		r := lipgloss.NewRenderer(io.Discard)
		r.SetColorProfile(prof)
		for _, p := range Palettes() {
			th := New(r, p)
			for _, c := range []struct {
				got Paint
				hex string
			}{{th.Text, p.Text}, {th.Muted, p.Muted}, {th.P99, p.P99}, {th.Border, p.Border}} {
				want := r.NewStyle().Foreground(lipgloss.Color(c.hex)).Render("x")
				if got := c.got.Render("x"); got != want {
					t.Errorf("%s, profile %d, %s: %q, lipgloss draws %q", p.Name, prof, c.hex, got, want)
				}
			}
		}
	}
}
