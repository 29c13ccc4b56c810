package discover

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestParseSource: bad values are one-line errors that name the part
// refused; good ones parse.
func TestParseSource(t *testing.T) {
	for _, bad := range []string{"", ",", "host", "host:0", "host:99999", "_agent.agents.svc", "_agent._tcp.x:80", "http://h:1"} {
		_, err := ParseSource(bad)
		var se *SourceError
		if !errors.As(err, &se) || !errors.Is(err, ErrSource) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	for _, good := range []string{"127.0.0.1:1,[::1]:2", "agents.ns.svc:7070", "_agent._tcp.agents.ns.svc"} {
		if s, err := ParseSource(good); err != nil || s.Empty() || s.String() != good {
			t.Errorf("%q: %v", good, err)
		}
	}
	if s, _ := ParseSource("127.0.0.1:1,10.0.0.1:2"); !s.Static() {
		t.Error("IPs need DNS")
	}
	if s, _ := ParseSource("127.0.0.1:1,vllm:8000"); s.Static() {
		t.Error("a DNS name needs no DNS")
	}
	if !(Source{}).Empty() {
		t.Error("the zero Source names something")
	}
	many := strings.Repeat("127.0.0.1:1,", MaxAddresses+1)
	if _, err := ParseSource(many); err == nil || len(err.Error()) > 200 {
		t.Errorf("%d items: %.300v", MaxAddresses+1, err)
	}
}

// fakeDNS answers from maps; a name in neither is not found.
type fakeDNS struct {
	mu   sync.Mutex
	host map[string][]string
	srv  map[string][]*net.SRV
}

func (f *fakeDNS) LookupHost(_ context.Context, host string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ips, ok := f.host[host]; ok {
		return ips, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (f *fakeDNS) LookupSRV(_ context.Context, _, _, name string) (string, []*net.SRV, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if recs, ok := f.srv[name]; ok {
		return name, recs, nil
	}
	return "", nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
}

// TestResolve: every A record at the item's port, every SRV record at
// its own port under its target's name, sorted without duplicates; a
// name that does not resolve is named while the others are returned.
func TestResolve(t *testing.T) {
	r := &fakeDNS{
		host: map[string][]string{"vllm.test": {"127.0.0.2", "127.0.0.1"}, "a0.test": {"127.0.0.1"}, "a1.test": {"127.0.0.3"}},
		srv: map[string][]*net.SRV{"_metrics._tcp.vllm.test": {
			{Target: "a0.test.", Port: 8000}, {Target: "a1.test.", Port: 8001}, {Target: "a0.test.", Port: 8000}}},
	}
	src, err := ParseSource("vllm.test:8000, _metrics._tcp.vllm.test, 127.0.0.9:9, gone.test:1")
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := src.Resolve(context.Background(), r)
	got := fmt.Sprint(addrs)
	want := "[{127.0.0.1:8000 vllm.test} {127.0.0.2:8000 vllm.test} {127.0.0.3:8001 a1.test} {127.0.0.9:9 127.0.0.9}]"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if err == nil || !strings.Contains(err.Error(), "discover: resolve gone.test") || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %v", err)
	}
}

// TestResolveBounded: a DNS answer of more than MaxAddresses records is
// cut there, and said so.
func TestResolveBounded(t *testing.T) {
	var recs []*net.SRV
	for i := range MaxAddresses + 5 {
		recs = append(recs, &net.SRV{Target: fmt.Sprintf("10.%d.%d.%d", i>>16, i>>8&255, i&255), Port: 80})
	}
	r := &fakeDNS{srv: map[string][]*net.SRV{"_m._tcp.x": recs, "_m._tcp.y": recs}}
	src, _ := ParseSource("_m._tcp.x,_m._tcp.y")
	addrs, err := src.Resolve(context.Background(), r)
	if len(addrs) != MaxAddresses || err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("%d addresses, %v", len(addrs), err)
	}
}

// TestFollow: a DNS source is resolved again, so a target added is
// found; a static one once; a false from found ends it.
func TestFollow(t *testing.T) {
	r := &fakeDNS{host: map[string][]string{"vllm.test": {"127.0.0.1"}}}
	src, _ := ParseSource("vllm.test:8000")
	var seen []int
	src.Follow(context.Background(), r, time.Millisecond, time.Second, func(a []Addr, err error) bool {
		seen = append(seen, len(a))
		r.mu.Lock()
		r.host["vllm.test"] = append(r.host["vllm.test"], fmt.Sprint("127.0.0.", len(a)+1))
		r.mu.Unlock()
		return len(seen) < 3
	})
	if fmt.Sprint(seen) != "[1 2 3]" {
		t.Errorf("resolutions of %v targets", seen)
	}
	static, _ := ParseSource("127.0.0.1:1")
	n := 0
	static.Follow(context.Background(), r, time.Millisecond, time.Second, func([]Addr, error) bool { n++; return true })
	if n != 1 {
		t.Errorf("a static source resolved %d times", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	src.Follow(ctx, r, time.Millisecond, time.Second, func([]Addr, error) bool { t.Error("found after the end"); return true })
}
