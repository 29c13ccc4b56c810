package fleet

import (
	"fmt"
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

// TestSharedClients: addresses of one shape share one client (one
// transport), however many; another certificate name is another shape;
// none follows a redirect.
func TestSharedClients(t *testing.T) {
	f := &Fleet{cfg: Config{PlainLoopback: true}}
	a, _ := f.client(discover.Addr{HostPort: "10.1.2.3:7070", ServerName: "10.1.2.3"})
	b, _ := f.client(discover.Addr{HostPort: "10.1.2.4:7070", ServerName: "10.1.2.4"})
	named, _ := f.client(discover.Addr{HostPort: "10.1.2.5:7070", ServerName: "agent.example"})
	again, _ := f.client(discover.Addr{HostPort: "10.1.2.6:7070", ServerName: "agent.example"})
	p1, _ := f.client(discover.Addr{HostPort: "127.0.0.1:7070"})
	p2, _ := f.client(discover.Addr{HostPort: "127.0.0.1:7071"})
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

// TestGate: at most its free polls run at once; the others start in
// the order they came, one as each ends.
func TestGate(t *testing.T) {
	g := gate{free: 2}
	var started []int
	for i := range 5 {
		g.enter(func() { started = append(started, i) })
	}
	if len(started) != 2 {
		t.Fatalf("%d started of 5 with 2 free", len(started))
	}
	for range 3 {
		g.leave()
	}
	if fmt.Sprint(started) != "[0 1 2 3 4]" {
		t.Errorf("started in the order %v", started)
	}
	g.leave()
	g.leave()
	if g.free != 2 || len(g.queue) != 0 {
		t.Errorf("after all ended: %d free, %d waiting", g.free, len(g.queue))
	}
}
