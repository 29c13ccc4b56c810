package ui

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// teatest leaves one goroutine per test model waiting for an interrupt
	// signal that never comes; it is the library's, not ours.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/charmbracelet/x/exp/teatest.NewTestModel.func2"))
}
