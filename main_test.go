package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestCommandLine(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"--version"}, 0, "infertop ", ""},
		{[]string{"--help"}, 0, "--concurrency", ""},
		{[]string{"sim", "--help"}, 0, "--slots", ""},
		{[]string{"--bogus"}, 2, "", "unknown flag: --bogus"},
		{[]string{"-c", "0"}, 2, "", "--concurrency must be within"},
		{[]string{"--prompt-tokens", "40000"}, 2, "", "--prompt-tokens must be within"},
		{[]string{"--window", "7s"}, 2, "", "--window must be one of"},
		{[]string{"--theme", "pink"}, 2, "", "unknown theme"},
		{[]string{"--api", "nope"}, 2, "", "unknown --api"},
		{[]string{"--api", "tgi"}, 2, "", "embedded sim speaks"},
		{[]string{"--extra-body", "[1]"}, 2, "", "must be a JSON object"},
		{[]string{"--max-tokens-field", "n"}, 2, "", "--max-tokens-field must be"},
		{[]string{"--ttft", "soon"}, 2, "", "unknown --ttft"},
		{[]string{"extra"}, 2, "", "unexpected argument"},
		{[]string{"--url", "http://127.0.0.1:9/v1"}, 2, "", "needs a terminal"},
		{[]string{"sim", "--preset", "huge"}, 2, "", "unknown sim preset"},
		{[]string{"sim", "--slots", "0"}, 2, "", "slots must be at least 1"},
		{[]string{"sim", "--addr", "256.0.0.1:1"}, 2, "", "sim:"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := run(tt.args, &out, &errb)
		if code != tt.code || !strings.Contains(out.String(), tt.out) || !strings.Contains(errb.String(), tt.err) {
			t.Errorf("%v: code %d, stdout %q, stderr %q; want %d, %q, %q", tt.args, code, out.String(), errb.String(), tt.code, tt.out, tt.err)
		}
		if tt.code == 2 && strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%v: error is not one line: %q", tt.args, errb.String())
		}
	}
}
