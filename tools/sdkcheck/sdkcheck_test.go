// Package sdkcheck holds the official OpenAI SDK (the openai npm package)
// to the sim's answers: make test-sdk installs the package (npm ci) and
// runs TestOpenAISDK, which starts the sims and runs check.mjs against
// them with node.
package sdkcheck

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

// TestOpenAISDK runs check.mjs against two sims on 127.0.0.1, one that
// answers text only and one that reasons first: the SDK's
// responses.stream().finalResponse() text and reasoning, and its default
// embeddings.create (base64). It runs only in make test-sdk
// (INFERTOP_SDK=1), which has run npm ci here first.
func TestOpenAISDK(t *testing.T) {
	if os.Getenv("INFERTOP_SDK") == "" {
		t.Skip("the OpenAI SDK check runs in make test-sdk (INFERTOP_SDK=1)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node: %v (make test-sdk needs node and npm)", err)
	}
	if _, err := os.Stat(filepath.Join("node_modules", "openai", "package.json")); err != nil {
		t.Fatalf("the openai package is not installed here (npm ci in tools/sdkcheck): %v", err)
	}
	p, err := sim.Preset("fast")
	if err != nil {
		t.Fatal(err)
	}
	plain := simtest.Start(t, p)
	p.Reasoning = sim.Reasoning{Tokens: 4}
	reasoning := simtest.Start(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "check.mjs", plain.URL, reasoning.URL, p.Model)
	out, err := cmd.CombinedOutput()
	t.Logf("node check.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("the OpenAI SDK check failed: %v", err)
	}
}
