package agent

import (
	"strings"
	"testing"
)

// TestTokenFileRequired: an agent without --token-file says the flag is
// required ("open : no such file or directory" said nothing of it).
func TestTokenFileRequired(t *testing.T) {
	_, _, err := (&Flags{Listen: "127.0.0.1:0"}).Open()
	if err == nil || !strings.Contains(err.Error(), "--token-file is required") {
		t.Fatalf("%v", err)
	}
}
