package endurance

import (
	"fmt"
	"regexp"
	"time"

	"github.com/infertop/infertop/tools/tmuxterm"
)

// screen is what the dashboard's terminal shows, or nothing where tmux
// could not say: it goes into error messages.
func screen(t *tmuxterm.Term) string {
	s, _ := t.Screen()
	return s
}

var concurrencyRE = regexp.MustCompile(`concurrency (\d+)`)

// pressAndWatch presses key and returns how long the screen took to show
// a different concurrency than before.
func pressAndWatch(t *tmuxterm.Term, key string) (time.Duration, error) {
	s, err := t.Screen()
	if err != nil {
		return 0, fmt.Errorf("endurance: %w", err)
	}
	before := concurrencyRE.FindString(s)
	if before == "" {
		return 0, fmt.Errorf("endurance: no concurrency on the screen:\n%s", s)
	}
	t0 := time.Now()
	if err := t.Keys(key); err != nil {
		return 0, fmt.Errorf("endurance: %w", err)
	}
	s, err = t.Wait(10*time.Second, 5*time.Millisecond, t.Screen, func(s string) bool {
		now := concurrencyRE.FindString(s)
		return now != "" && now != before
	})
	if err != nil {
		return 0, fmt.Errorf("endurance: %s not answered (still %q): %w:\n%s", key, before, err, s)
	}
	return time.Since(t0), nil
}
