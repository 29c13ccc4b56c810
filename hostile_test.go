package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/infertop/infertop/tools/hostile"
	"github.com/infertop/infertop/tools/tmuxterm"
)

// TestHostileTextStaysOut: what a hostile endpoint hides in its error
// bodies, stream errors and model names reaches neither the summary nor
// stderr raw, and the JSON keeps it exactly, escaped.
func TestHostileTextStaysOut(t *testing.T) {
	t.Parallel()
	for _, kind := range []hostile.Kind{hostile.ErrorBody, hostile.StreamError, hostile.ModelName} {
		t.Run(string(kind), func(t *testing.T) {
			url := hostile.Start(t, kind)
			path := t.TempDir() + "/r.json"
			args := []string{"run", "--url", url, "--api", "openai-chat", "--requests", "6", "-c", "2", "--server-metrics", "off", "--json", path}
			if kind != hostile.ModelName {
				args = append(args, "--model", "m")
			}
			var out, errb bytes.Buffer
			code := run(args, &out, &errb)
			for where, text := range map[string]string{"summary": out.String(), "stderr": errb.String()} {
				if strings.ContainsAny(text, "\x1b\x07\u202e") {
					t.Errorf("exit %d: the %s holds the server's raw escapes: %q", code, where, text)
				}
			}
			if !strings.Contains(out.String()+errb.String(), `\x1b]0;pwned`) {
				t.Errorf("the payload is not shown escaped anywhere:\n%s\n%s", out.String(), errb.String())
			}
			b, _ := os.ReadFile(path)
			if bytes.ContainsAny(b, "\x1b\x07") {
				t.Errorf("the JSON holds raw control bytes")
			}
		})
	}
}

// TestHostileDashboard: the dashboard watching a server whose stream
// errors and model name hold escapes keeps its pane title and its screen,
// and still answers keys.
func TestHostileDashboard(t *testing.T) {
	t.Parallel()
	self := selfForTmux(t)
	url := hostile.Start(t, hostile.ModelName)
	term := tmuxterm.New(t, fmt.Sprintf("infertop-hostile-%d", os.Getpid()), 200, 50,
		fmt.Sprintf("env INFERTOP_TEST_MAIN=1 TERM=xterm-256color %q --url %s --api openai-chat --tick 100ms -c 2 --server-metrics off; echo EXITED $?; sleep 30", self, url))
	s := term.Wait("the dashboard", term.Screen, func(s string) bool { return strings.Contains(s, "Latency") && strings.Contains(s, `\x1b]0;pwned`) })
	if title := term.Display("#{pane_title}"); strings.Contains(title, "pwned") {
		t.Errorf("the server set the pane title: %q", title)
	}
	if strings.Contains(s, "exe.png") {
		t.Errorf("reversed text on the screen:\n%s", s)
	}
	term.Keys("K")
	term.Wait("concurrency 4", term.Screen, func(s string) bool { return strings.Contains(s, "concurrency 4") })
	term.Keys("q")
	term.Wait("a clean exit", term.Screen, func(s string) bool { return strings.Contains(s, "EXITED 0") })
}
