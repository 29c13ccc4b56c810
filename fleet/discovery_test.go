package fleet

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/discover"
	"github.com/infertop/infertop/report"
)

// TestDNS: agents found through a DNS server started here: A records
// (every agent at one port, on 127.0.0.x) and SRV records (each its own
// port), re-resolved, so an agent added to the records is followed.
func TestDNS(t *testing.T) {
	a := newFake(t, testToken, state(0, 3), result(t, 4, 3, 0))
	b := newFake(t, testToken, state(1, 3), result(t, 4, 3, 0))
	c := newFake(t, testToken, state(2, 3), result(t, 4, 3, 0))
	port := func(f *fake) uint16 {
		_, p, _ := net.SplitHostPort(f.addr())
		var n uint16
		for _, ch := range p {
			n = n*10 + uint16(ch-'0')
		}
		return n
	}
	var mu sync.Mutex
	srvTargets := []*fake{a, b}
	mux := dns.NewServeMux()
	mux.HandleFunc(".", func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		name := q.Question[0].Name
		switch {
		case q.Question[0].Qtype == dns.TypeSRV && name == "_agent._tcp.agents.test.":
			mu.Lock()
			for i, f := range srvTargets {
				m.Answer = append(m.Answer, &dns.SRV{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeSRV, Class: dns.ClassINET, Ttl: 1},
					Priority: 0, Weight: 1, Port: port(f), Target: []string{"a0.agents.test.", "a1.agents.test.", "a2.agents.test."}[i]})
			}
			mu.Unlock()
		case q.Question[0].Qtype == dns.TypeA && strings.HasSuffix(name, ".agents.test."):
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 1},
				A: net.IPv4(127, 0, 0, 1)})
		case q.Question[0].Qtype == dns.TypeA && name == "many.test.":
			for i := 1; i <= 3; i++ {
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 1},
					A: net.IPv4(127, 0, 0, byte(i))})
			}
		}
		_ = w.WriteMsg(m)
	})
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	server := &dns.Server{PacketConn: pc, Handler: mux, NotifyStartedFunc: func() { close(started) }}
	go func() { _ = server.ActivateAndServe() }()
	<-started
	defer server.Shutdown()
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
	// A records: every address at the given port.
	src, err := discover.ParseSource("many.test:7070")
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := src.Resolve(context.Background(), r)
	if err != nil || len(addrs) != 3 || addrs[0].HostPort != "127.0.0.1:7070" || addrs[2].HostPort != "127.0.0.3:7070" || addrs[0].ServerName != "many.test" {
		t.Fatalf("A records: %v %+v", err, addrs)
	}
	// SRV: each its port; the third agent appears later.
	f := follow(t, "_agent._tcp.agents.test", func(c *Config) { c.Resolver = r })
	waitView(t, f, "two agents through SRV", func(v View) bool {
		return len(v.Agents) == 2 && v.Agents[0].Result != nil && v.Agents[1].Result != nil && v.Agents[1].ServerName == "a1.agents.test"
	})
	mu.Lock()
	srvTargets = append(srvTargets, c)
	mu.Unlock()
	for _, x := range []*fake{a, b, c} {
		x.set(func(s *agent.State) { s.Final, s.Done = true, true })
	}
	v := waitView(t, f, "three agents done", func(v View) bool { return v.Done })
	if len(v.Agents) != 3 || len(v.Missing) != 0 {
		t.Fatalf("agents %+v, missing %v", v.Agents, v.Missing)
	}
	for _, ag := range v.Agents {
		if ag.Status != report.AgentDone {
			t.Errorf("%s: %s %s", ag.Addr, ag.Status, ag.Why)
		}
	}
}
