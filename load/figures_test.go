package load

import (
	"math"
	"testing"
	"time"
)

// The figures of issue 24: every rate over the time it describes.

// TestWarmupOutOfTheRates: the warm-up is in none of the run's figures, so
// it is in none of their denominators: the run's duration and rates, and
// the window's, start where the measured phase does.
func TestWarmupOutOfTheRates(t *testing.T) {
	k := Knobs{Concurrency: 2, PromptTokens: 4, OutputTokens: 2}
	s := runFor(t, Config{Do: quickDo, Knobs: k, Warmup: Warmup{Duration: 300 * time.Millisecond}, Duration: 600 * time.Millisecond}, 10*time.Second)
	if len(s.Phases) != 2 || !s.Phases[0].Warmup || s.Phases[1].Warmup {
		t.Fatalf("phases %+v", s.Phases)
	}
	m := s.Phases[1]
	if s.Run.Start != m.Start || s.Run.Duration != m.Duration || s.Run.Duration > s.Elapsed-m.Start {
		t.Errorf("run from %v for %v, the measured phase from %v for %v (the run ended at %v)", s.Run.Start, s.Run.Duration, m.Start, m.Duration, s.Elapsed)
	}
	if want := float64(s.Run.Completed) / s.Run.Duration.Seconds(); math.Abs(s.Run.ReqPerSec-want) > 1e-9 || s.Run.Completed == 0 {
		t.Errorf("run %.1f req/s, want %.1f (%d completed)", s.Run.ReqPerSec, want, s.Run.Completed)
	}
	if s.Covered > s.Elapsed-m.Start {
		t.Errorf("the window covers %v of a run whose measured part is %v", s.Covered, s.Elapsed-m.Start)
	}
}

// TestSentRateOverTheSending: the open loop's sent rate is over the time
// requests were being sent, never the drain after it.
func TestSentRateOverTheSending(t *testing.T) {
	k := Knobs{Mode: OpenLoop, Rate: 200, Concurrency: 0, PromptTokens: 4, OutputTokens: 2}
	s := runFor(t, Config{Do: fakeDo(200 * time.Millisecond), Knobs: k, Duration: 300 * time.Millisecond}, 10*time.Second)
	run := s.Run
	if run.Sending < 300*time.Millisecond || run.Sending > s.Elapsed-150*time.Millisecond {
		t.Errorf("sending for %v of a run of %v whose last 200 ms were the drain", run.Sending, s.Elapsed)
	}
	if want := float64(run.Sent()) / run.Sending.Seconds(); run.Sent() == 0 || math.Abs(run.SentPerSec-want) > 1e-9 {
		t.Errorf("sent %d at %.1f/s, want %.1f/s", run.Sent(), run.SentPerSec, want)
	}
	if len(s.Phases) != 1 || s.Phases[0].Sending != run.Sending {
		t.Errorf("phases %+v", s.Phases)
	}
}
