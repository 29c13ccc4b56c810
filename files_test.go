package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFilesBounded: every file given to a flag is read with a bound: an
// endless one (/dev/zero) is a one-line usage error, read no further
// than the bound (issue 40, item 12: 1.3-2.8 GB each before).
func TestFilesBounded(t *testing.T) {
	t.Parallel()
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("a-token-of-sixteen-bytes-or-more"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--trace", "/dev/zero"},
		{"--dataset", "/dev/zero"},
		{"--api-key-file", "/dev/zero"},
		{"-H", "@/dev/zero"},
		{"--url", "http://127.0.0.1:1/v1", "--api", "openai-chat", "--model", "m", "--cacert", "/dev/zero"},
		{"--agents", "127.0.0.1:1", "--agents-token-file", token, "--agents-cacert", "/dev/zero"},
	} {
		var out, errb bytes.Buffer
		if args[0] != "--agents" {
			args = append([]string{"--requests", "1"}, args...)
		}
		code := run(append([]string{"run"}, args...), &out, &errb)
		msg := strings.TrimSpace(errb.String())
		if code != 2 || !strings.Contains(msg, "larger than the most read") || strings.Count(msg, "\n") > 0 {
			t.Errorf("%v: exit %d, %q", args, code, msg)
		}
	}
}
