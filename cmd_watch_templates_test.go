package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/infertop/infertop/flaghelp"
	"github.com/infertop/infertop/watch/watchflag"
)

// TestWatchTemplatesParse: every `infertop watch` the rollout templates
// in deploy/rollouts run parses with the watch's own flags.
func TestWatchTemplatesParse(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("deploy/rollouts/*.yaml")
	found := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(b, []byte("\n---\n")) {
			var v any
			if err := yaml.Unmarshal(doc, &v); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for _, args := range watchArgs(v) {
				found++
				fs := flaghelp.NewFlagSet("watch", "", &bytes.Buffer{})
				watchflag.Add(fs)
				if err := flaghelp.Parse(fs, args[1:]); err != nil {
					t.Errorf("%s: %v: %v", f, args, err)
				}
			}
		}
	}
	if found < 2 {
		t.Fatalf("%d watch command lines in the templates", found)
	}
}

// watchArgs finds every "args" list whose first item is "watch".
func watchArgs(v any) [][]string {
	var out [][]string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if list, ok := x.([]any); ok && k == "args" && len(list) > 0 && list[0] == "watch" {
				var args []string
				for _, a := range list {
					s, _ := a.(string)
					args = append(args, s)
				}
				out = append(out, args)
				continue
			}
			out = append(out, watchArgs(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, watchArgs(x)...)
		}
	}
	return out
}
