package fleet

import (
	"strings"
	"testing"

	"github.com/infertop/infertop/discover"
)

// TestTLSOnly: an agent off loopback is never polled in the clear.
func TestTLSOnly(t *testing.T) {
	f := &Fleet{cfg: Config{PlainLoopback: true}}
	if _, base := f.client(discover.Addr{HostPort: "10.1.2.3:7070", ServerName: "x"}); !strings.HasPrefix(base, "https://") {
		t.Errorf("off loopback: %s", base)
	}
	if _, base := f.client(discover.Addr{HostPort: "127.0.0.1:7070"}); !strings.HasPrefix(base, "http://") {
		t.Errorf("loopback, plain allowed: %s", base)
	}
	f.cfg.PlainLoopback = false
	if _, base := f.client(discover.Addr{HostPort: "127.0.0.1:7070"}); !strings.HasPrefix(base, "https://") {
		t.Errorf("loopback, plain not allowed: %s", base)
	}
}
