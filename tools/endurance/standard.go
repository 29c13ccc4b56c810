package endurance

import (
	"time"

	"github.com/infertop/infertop/probe"
)

// Faults is the standard mix: every fault the sim has, a few percent each.
// A stall (1.5 s) outlasts the dashboard's --timeout (1 s), so it ends as
// a timeout; a huge line (2 MiB) is refused as malformed.
const Faults = "500=0.02,429=0.02,reset=0.02,stall=0.005,stall-mid=0.005,malformed=0.02,huge-line=0.002,trickle=0.005,pause=1500ms"

// Standard is the run the bench makes for an hour and the tests for 30
// seconds: the dashboard at concurrency 16 (32 while K is in effect), 32
// tokens in and out, a one-second request timeout, against the fast sim
// with Faults, a key press every keyEvery.
func Standard(infertop, env []string, d, keyEvery time.Duration) Config {
	return Config{
		Infertop: infertop, Env: env, Duration: d, KeyEvery: keyEvery,
		Faults: Faults, SimArgs: []string{"--preset", "fast"},
		LoadArgs: []string{"-c", "16", "--prompt-tokens", "32", "--output-tokens", "32", "--timeout", "1s"},
	}
}

// StandardBounds are what a Standard run must hold to: every class the
// faults make counted (and successes), memory flat, and room for the
// connections of the highest concurrency K reached (32), all of which may
// still be idle in the pool at the end (they live 90 s).
func StandardBounds() Bounds {
	return Bounds{ExtraConns: 32, Classes: []string{probe.OK.String(), probe.HTTP5xx.String(), probe.HTTP429.String(),
		probe.StreamCut.String(), probe.Timeout.String(), probe.Malformed.String()}}
}
