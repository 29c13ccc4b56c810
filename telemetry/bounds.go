package telemetry

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"
)

// Bounds on what one scrape of the GPUs may cost and on the numbers
// believed from it (package engines bounds the server's page its own
// way). A page is someone else's text: a DCGM page of 300k gpu labels
// (12.5 MB) grew to 1.4 GB through the Prometheus parser, and one value
// of 1.7e308 or a NaN stopped the reports being written.
// So only the families infertop reads are handed to the parser, each with
// a bounded number of series, and a number that cannot be true is set
// aside, as if the server had not reported it.
const (
	// maxPageBytes is the most of a page read.
	maxPageBytes = 16 << 20
	// maxPageLine is the longest line of a page (a real one is under 1 KB).
	maxPageLine = 64 << 10
	// maxKeptBytes is the most of a page handed to the parser: the
	// families read, a few KB on a DCGM page.
	maxKeptBytes = 2 << 20
	// maxSeries is the most samples of one family (a GPU each).
	maxSeries = 4096
	// maxGPUs is the most GPUs one DCGM page may list (a node has 8 or 16).
	maxGPUs = 256
	// maxIndexBytes shortens a GPU's label as kept and shown.
	maxIndexBytes = 64
	// maxCount is the largest counter believed: 10^15 joules is a 10 kW
	// GPU for three thousand years.
	maxCount = 1e15
	// maxGPUWatts is the most power believed of one GPU (a B200 draws
	// 1.2 kW), and so of its energy counter's rise over a second.
	maxGPUWatts = 10_000
)

// errPage marks a page past one of the bounds.
var errPage = errors.New("metrics page past infertop's bounds")

// filterPage reads a Prometheus text page and returns only the lines of
// the families wanted (their samples, TYPE and HELP lines), within the
// bounds above; it never holds more than one line of what it drops.
func filterPage(r io.Reader, wanted func(name string) bool) ([]byte, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, maxPageBytes), maxPageLine)
	var kept bytes.Buffer
	series := map[string]int{}
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return nil, fmt.Errorf("%w: a line longer than %d KiB", errPage, maxPageLine>>10)
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("metrics page: %w", err)
		}
		if fam, sample := family(line, wanted); fam != "" {
			if sample {
				if series[fam]++; series[fam] > maxSeries {
					return nil, fmt.Errorf("%w: more than %d series of %s", errPage, maxSeries, fam)
				}
			}
			if kept.Len()+len(line)+1 > maxKeptBytes {
				return nil, fmt.Errorf("%w: more than %d MiB of the metrics read", errPage, maxKeptBytes>>20)
			}
			kept.Write(line)
			if len(line) > 0 && line[len(line)-1] != '\n' {
				kept.WriteByte('\n')
			}
		}
		if err == io.EOF {
			return kept.Bytes(), nil
		}
	}
}

// family returns the wanted family a line belongs to ("" for none) and
// whether it is a sample (else a TYPE or HELP line).
func family(line []byte, wanted func(string) bool) (fam string, sample bool) {
	line = bytes.TrimLeft(line, " \t")
	if len(line) == 0 {
		return "", false
	}
	if line[0] == '#' {
		f := bytes.Fields(line)
		if len(f) >= 3 && (string(f[1]) == "TYPE" || string(f[1]) == "HELP") && wanted(string(f[2])) {
			return string(f[2]), false
		}
		return "", false
	}
	end := bytes.IndexAny(line, "{ \t")
	if end < 0 {
		end = len(line)
	}
	name := string(line[:end])
	if wanted(name) {
		return name, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && wanted(base) {
			return base, true
		}
	}
	return "", false
}

// plausible says whether v can be a count, a gauge or a counter: finite,
// not negative, at most maxCount.
func plausible(v float64) bool {
	return !math.IsNaN(v) && v >= 0 && v <= maxCount
}

// within says whether v is a finite number in [lo, hi].
func within(v, lo, hi float64) bool { return !math.IsNaN(v) && v >= lo && v <= hi }

// setAside clears the fields of a GPU reading that cannot be true: NaN,
// infinities, negative power or energy, utilisation past 100 %.
func (g *GPU) setAside() {
	if !within(g.PowerW, 0, maxGPUWatts) {
		g.PowerW = 0
	}
	if g.HasEnergy && !plausible(g.EnergyJ) {
		g.EnergyJ, g.HasEnergy = 0, false
	}
	if !within(g.UtilPct, 0, 100) {
		g.UtilPct = 0
	}
	if !within(g.MemUsedMiB, 0, 1<<30) {
		g.MemUsedMiB = 0
	}
	if !within(g.TempC, -100, 1000) {
		g.TempC = 0
	}
	if !within(g.SMClockMHz, 0, 1e5) {
		g.SMClockMHz = 0
	}
	if len(g.Index) > maxIndexBytes {
		g.Index = strings.ToValidUTF8(g.Index[:maxIndexBytes], "") + "…"
	}
	if !utf8.ValidString(g.Index) {
		g.Index = strings.ToValidUTF8(g.Index, "?")
	}
}
