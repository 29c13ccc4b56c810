package endurance

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// term is a tmux server with one session, "e", running the dashboard.
type term struct{ socket string }

func (t *term) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", t.socket}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("endurance: tmux %s: %w: %s", args[0], err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func (t *term) start(w, h int, cmd string) error {
	_, err := t.tmux("new-session", "-d", "-s", "e", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), cmd)
	return err
}

func (t *term) kill() { exec.Command("tmux", "-L", t.socket, "kill-server").Run() }

func (t *term) screen() string {
	s, _ := t.tmux("capture-pane", "-p", "-t", "e")
	return s
}

func (t *term) keys(k ...string) error {
	_, err := t.tmux(append([]string{"send-keys", "-t", "e"}, k...)...)
	return err
}

var concurrencyRE = regexp.MustCompile(`concurrency (\d+)`)

// pressAndWatch presses key and returns how long the screen took to show
// a different concurrency than before.
func (t *term) pressAndWatch(key string) (time.Duration, error) {
	before := concurrencyRE.FindString(t.screen())
	if before == "" {
		return 0, fmt.Errorf("endurance: no concurrency on the screen:\n%s", t.screen())
	}
	t0 := time.Now()
	if err := t.keys(key); err != nil {
		return 0, err
	}
	for {
		s := t.screen()
		if now := concurrencyRE.FindString(s); now != "" && now != before {
			return time.Since(t0), nil
		}
		if time.Since(t0) > 10*time.Second {
			return 0, fmt.Errorf("endurance: %s not answered within 10s (still %q):\n%s", key, before, s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
