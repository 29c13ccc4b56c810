package fleet

import (
	"strings"
	"testing"
)

// TestTLSOnly: an agent off loopback is never polled in the clear.
func TestTLSOnly(t *testing.T) {
	f := &Fleet{cfg: Config{PlainLoopback: true}}
	if _, base := f.client(Addr{HostPort: "10.1.2.3:7070", ServerName: "x"}); !strings.HasPrefix(base, "https://") {
		t.Errorf("off loopback: %s", base)
	}
	if _, base := f.client(Addr{HostPort: "127.0.0.1:7070"}); !strings.HasPrefix(base, "http://") {
		t.Errorf("loopback, plain allowed: %s", base)
	}
	f.cfg.PlainLoopback = false
	if _, base := f.client(Addr{HostPort: "127.0.0.1:7070"}); !strings.HasPrefix(base, "https://") {
		t.Errorf("loopback, plain not allowed: %s", base)
	}
}

// TestSharedClients: addresses of one shape share one client (one
// transport), however many; another certificate name is another shape;
// none follows a redirect.
func TestSharedClients(t *testing.T) {
	f := &Fleet{cfg: Config{PlainLoopback: true}}
	a, _ := f.client(Addr{HostPort: "10.1.2.3:7070", ServerName: "10.1.2.3"})
	b, _ := f.client(Addr{HostPort: "10.1.2.4:7070", ServerName: "10.1.2.4"})
	named, _ := f.client(Addr{HostPort: "10.1.2.5:7070", ServerName: "agent.example"})
	again, _ := f.client(Addr{HostPort: "10.1.2.6:7070", ServerName: "agent.example"})
	p1, _ := f.client(Addr{HostPort: "127.0.0.1:7070"})
	p2, _ := f.client(Addr{HostPort: "127.0.0.1:7071"})
	if a != b || named != again || p1 != p2 || a == named || a == p1 {
		t.Errorf("shapes: IPs %v, named %v, plain %v, apart %v %v", a == b, named == again, p1 == p2, a != named, a != p1)
	}
	if len(f.clients) != 3 {
		t.Errorf("%d clients for 3 shapes", len(f.clients))
	}
	for _, c := range f.clients {
		if c.CheckRedirect == nil {
			t.Error("a client follows redirects")
		}
	}
}
