package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/infertop/infertop/tools/endurance"
)

func enduranceRun(out *bytes.Buffer, d time.Duration) error {
	bin, cleanup, err := buildInfertop()
	if err != nil {
		return err
	}
	defer cleanup()
	cfg := endurance.Standard([]string{bin}, []string{"TERM=xterm-256color"}, d, 30*time.Second)
	cfg.Log = os.Stderr
	res, err := endurance.Run(context.Background(), cfg)
	if err != nil {
		return err
	}
	verdict := "Held: memory flat, no goroutine or socket left behind, every fault counted in its class, every key answered, a clean exit."
	if err := res.Check(endurance.StandardBounds()); err != nil {
		verdict = "NOT held: " + err.Error()
	}
	fmt.Fprintf(out, "## 6. Endurance\n\nThe dashboard (`infertop --url SIM %s --metrics-addr ...`) in tmux at 120x40 for %s against `infertop sim %s --faults %s`, sampled every second through its own exporter; K and J pressed in turn every 30 s; the load paused and drained at a tenth of the run and at its end to count what is left.\n\n%s\n%s\n\n",
		strings.Join(cfg.LoadArgs, " "), d, strings.Join(cfg.SimArgs, " "), endurance.Faults, res.Summary(), verdict)
	return nil
}
