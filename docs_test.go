package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/infertop/infertop/tools/tmuxterm"
)

// docFiles are the documents a person reads: the front door, the
// repository's own, the guides and the reference.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "ARCHITECTURE.md", "CONTRIBUTING.md", "BENCHMARKS.md"}
	for _, dir := range []string{"docs/guide", "docs/reference", "docs/reference/flags"} {
		md, err := filepath.Glob(filepath.Join(dir, "*.md"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, md...)
	}
	return files
}

// TestGuides holds the documents to what a reader needs of them: the
// README a front door (under 300 lines), no test's name in a guide (a
// guide is for the user; the tests are CONTRIBUTING.md's), and every
// relative link and its anchor leading somewhere.
func TestGuides(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(readme, []byte("\n")); n >= 300 {
		t.Errorf("README.md has %d lines; the front door stays under 300 (the rest belongs in docs/guide)", n)
	}
	guides, _ := filepath.Glob("docs/guide/*.md")
	if len(guides) < 10 {
		t.Errorf("docs/guide has %d pages", len(guides))
	}
	testName := regexp.MustCompile(`\bTest[A-Z]\w*`)
	for _, g := range guides {
		b, _ := os.ReadFile(g)
		if m := testName.FindAll(b, -1); m != nil {
			t.Errorf("%s names tests (%s): a guide is for the user; CONTRIBUTING.md has the tests", g, bytes.Join(m, []byte(", ")))
		}
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, m := range link.FindAllSubmatch(b, -1) {
			target := string(m[1])
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), path)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s links to %s, which is not there", f, target)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(dest, ".md") && !slices.Contains(anchors(t, dest), frag) {
				t.Errorf("%s links to %s: %s has no heading #%s", f, target, dest, frag)
			}
		}
	}
}

// anchors are the anchors GitHub gives a Markdown file's headings.
func anchors(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	inFence := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var a strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
				a.WriteRune(r)
			case r == ' ':
				a.WriteRune('-')
			}
		}
		out = append(out, a.String())
	}
	return out
}

// TestExporterReference holds docs/reference/exporter.md to the
// exporter: every series the exporter's code names is on the page, and
// every series the page names is the exporter's.
func TestExporterReference(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("docs/reference/exporter.md")
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`"(infertop_[a-z_]+)"`)
	code := map[string]bool{}
	srcs, _ := filepath.Glob("exporter/*.go")
	for _, f := range srcs {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, _ := os.ReadFile(f)
		for _, m := range name.FindAllSubmatch(b, -1) {
			code[string(m[1])] = true
		}
	}
	if len(code) < 20 {
		t.Fatalf("found %d series in exporter/", len(code))
	}
	for n := range code {
		if !bytes.Contains(page, []byte("`"+n+"`")) {
			t.Errorf("the exporter serves %s; docs/reference/exporter.md does not name it", n)
		}
	}
	for _, m := range regexp.MustCompile("`(infertop_[a-z_]+)`").FindAllSubmatch(page, -1) {
		if n := string(m[1]); !code[n] {
			t.Errorf("docs/reference/exporter.md names %s, which the exporter does not serve", n)
		}
	}
}

// simBlock is a ```sh sim block of a document: shell lines that run as
// written against the embedded sim, or a sim they start.
type simBlock struct {
	file string
	line int
	text string
}

// simBlocks are the ```sh sim blocks of file.
func simBlocks(t *testing.T, file string) []simBlock {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []simBlock
	var cur *simBlock
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```sh sim":
			cur = &simBlock{file: file, line: n}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	return out
}

// listensOn is the address a backgrounded line serves on (--addr,
// --listen), "" when none: the block waits for it before its next line,
// as a person would see the server's first line before typing the next.
var listensOn = regexp.MustCompile(`--(?:addr|listen)[ =](\S+)`)

// prepare makes a block a bash script: continuation lines joined, every
// 127.0.0.1 or localhost port moved to a free one (the same port
// everywhere in the block), a wait for each server a backgrounded line
// starts.
func prepare(t *testing.T, text string) string {
	t.Helper()
	text = strings.ReplaceAll(text, "\\\n", " ")
	ports := map[string]string{}
	text = regexp.MustCompile(`(127\.0\.0\.1|localhost):(\d{2,5})`).ReplaceAllStringFunc(text, func(s string) string {
		host, port, _ := strings.Cut(s, ":")
		if _, ok := ports[port]; !ok {
			ports[port] = freePort(t)
		}
		return host + ":" + ports[port]
	})
	var b strings.Builder
	b.WriteString("set -euo pipefail\n")
	b.WriteString(`__wait() { local h=${1%:*} p=${1##*:}; for _ in $(seq 200); do (exec 3<>"/dev/tcp/$h/$p") 2>/dev/null && return 0; sleep 0.1; done; echo "nothing listens on $1" >&2; return 1; }` + "\n")
	for _, line := range strings.Split(text, "\n") {
		b.WriteString(line + "\n")
		code := line
		if i := strings.Index(code, " #"); i >= 0 {
			code = code[:i]
		}
		if !strings.HasSuffix(strings.TrimSpace(code), "&") {
			continue
		}
		if m := listensOn.FindStringSubmatch(code); m != nil {
			b.WriteString("__wait " + m[1] + "\n")
		}
	}
	return b.String()
}

// freePort is a port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// TestGuideCommands runs every ```sh sim block of the README and the
// guides, as written, in bash, with `infertop` this test binary through
// guideShim: a run's duration cut to a few seconds, a dashboard started in
// tmux and quit. Each document's blocks run in order in one folder (a
// later block reads the files an earlier one wrote); a block fails on a
// command's exit code 2 or more, or past a minute. Traffic goes to
// 127.0.0.1 only. make test-guides runs it (INFERTOP_GUIDES=1).
func TestGuideCommands(t *testing.T) {
	if os.Getenv("INFERTOP_GUIDES") != "1" {
		t.Skip("the guides' commands run in make test-guides (INFERTOP_GUIDES=1)")
	}
	self := selfForTmux(t)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	repo, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	shim := fmt.Sprintf("#!/bin/sh\nexec env INFERTOP_GUIDE_SHIM=1 %q \"$@\"\n", self)
	if err := os.WriteFile(filepath.Join(bin, "infertop"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	docs, _ := filepath.Glob("docs/guide/*.md")
	docs = append([]string{"README.md"}, docs...)
	for _, doc := range docs {
		blocks := simBlocks(t, doc)
		if len(blocks) == 0 {
			continue
		}
		t.Run(filepath.Base(doc), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			// The examples name the repository's test data (load/testdata),
			// and the README's run ./infertop, as make build leaves it.
			if err := os.Symlink(filepath.Join(repo, "load"), filepath.Join(dir, "load")); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "infertop"), []byte(shim), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, b := range blocks {
				runBlock(t, b, prepare(t, b.text), dir, bin)
			}
		})
	}
}

// runBlock runs one block's script in dir, bin first on the PATH, and
// ends whatever it left running (a sim in the background) with it.
func runBlock(t *testing.T, b simBlock, script, dir, bin string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A file, not a pipe: a pipe's reader would wait for the background
	// jobs, which hold it, to end.
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	err = cmd.Run()
	if cmd.Process != nil { // the block's own background jobs
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		time.Sleep(200 * time.Millisecond)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		text, _ := os.ReadFile(out.Name())
		t.Errorf("%s:%d: the block failed after %v: %v\n%s\noutput:\n%s", b.file, b.line, time.Since(start).Round(time.Millisecond), err, b.text, tail(string(text), 4000))
		return
	}
	t.Logf("%s:%d: ran in %v", b.file, b.line, time.Since(start).Round(time.Millisecond))
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// guideCut is how long a guide's run is let go on.
const guideCut = "3s"

// guideShim is infertop as the guides' commands run in their test: a
// headless run (or an agent) with its load cut to guideCut (its drain to
// 2 s, no linger for a last scrape), a dashboard
// in a tmux terminal of its own, quit once it draws a running load; exit
// code 1 (a verdict: an SLO broke, a canary regressed) is said on stderr
// and taken as having run.
func guideShim(args []string) int {
	code := guideRun(args)
	if code == 1 {
		fmt.Fprintln(os.Stderr, "infertop (the guides' test): exit code 1, a verdict: the command ran")
		return 0
	}
	return code
}

var guideTerms atomic.Int64

func guideRun(args []string) int {
	has := func(names ...string) bool {
		return slices.ContainsFunc(args, func(a string) bool {
			return slices.ContainsFunc(names, func(n string) bool { return a == n || strings.HasPrefix(a, n+"=") })
		})
	}
	dashboard := len(args) == 0 || strings.HasPrefix(args[0], "-") && !has("--help", "-h", "--version")
	switch {
	case dashboard:
		return guideDashboard(args)
	case (args[0] == "run" || args[0] == "agent") && !has("--agents", "--find-max", "--matrix"):
		args = append(args, "--duration", guideCut, "--drain", "2s", "--metrics-linger", "0s")
	case args[0] == "watch" && has("--headless"):
		var cut []string
		for i := 0; i < len(args); i++ {
			switch {
			case args[i] == "--duration":
				i++
			case !strings.HasPrefix(args[i], "--duration="):
				cut = append(cut, args[i])
			}
		}
		args = append(cut, "--duration", guideCut)
	}
	return (&app{stdout: os.Stdout, stderr: os.Stderr}).run(args)
}

// guideDashboard runs the dashboard in tmux until it draws a running
// load, then presses q: its exit code is the dashboard's.
func guideDashboard(args []string) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	rc := filepath.Join(os.TempDir(), fmt.Sprintf("infertop-guide-%d-%d.rc", os.Getpid(), guideTerms.Add(1)))
	defer os.Remove(rc)
	line := "env INFERTOP_TEST_MAIN=1 TERM=xterm-256color " + shellQuote(self)
	for _, a := range args {
		line += " " + shellQuote(a)
	}
	line += "; echo $? > " + shellQuote(rc) + "; sleep 30"
	term, err := tmuxterm.Start(fmt.Sprintf("infertop-guide-%d-%d", os.Getpid(), guideTerms.Add(1)), 100, 30, line)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	defer term.Kill()
	screen, err := term.Wait(20*time.Second, 100*time.Millisecond, term.Screen, func(s string) bool {
		return strings.Contains(s, "● running") && strings.Contains(s, "TTFT")
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "the dashboard never drew a running load: %v\n%s\n", err, screen)
		return 3
	}
	if err := term.Keys("q"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if b, err := os.ReadFile(rc); err == nil && len(bytes.TrimSpace(b)) > 0 {
			code, _ := strconv.Atoi(string(bytes.TrimSpace(b)))
			return code
		}
	}
	fmt.Fprintln(os.Stderr, "the dashboard did not end on q")
	return 3
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
