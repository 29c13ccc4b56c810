package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// buildInfertop builds the infertop command into a temporary folder.
func buildInfertop() (string, func(), error) {
	dir, err := os.MkdirTemp("", "infertop-bench")
	if err != nil {
		return "", nil, err
	}
	bin := filepath.Join(dir, "infertop")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/infertop/infertop").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("go build: %w: %s", err, out)
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}
