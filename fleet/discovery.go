package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxAddresses bounds the agents one source names (a list, or what its
// DNS names resolve to): agent.MaxAgents, and no more.
const MaxAddresses = 10000

// Source is where the agents are: a list of host:port, each an IP or a
// DNS name whose A/AAAA records are every agent at that port, or SRV
// names (_agent._tcp.infertop-agents.NAMESPACE.svc), whose records name
// each agent's host and port. DNS names are resolved again on every
// Resolve, so agents that come and go are followed.
type Source struct {
	spec    string
	entries []entry
}

// entry is one item of a source: host:port, or an SRV name.
type entry struct {
	host, port string
	srv        bool
}

// ErrSource is an --agents value that names no agents.
var ErrSource = errors.New("want host:port,host:port, a DNS name with a port (NAME:PORT), or an SRV name (_agent._tcp.NAME)")

// ParseSource reads an --agents value.
func ParseSource(spec string) (Source, error) {
	src := Source{spec: spec}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if strings.HasPrefix(item, "_") {
			if !strings.Contains(item, "._tcp.") || strings.ContainsAny(item, ":/ ") {
				return Source{}, fmt.Errorf("fleet: --agents %q: an SRV name is _SERVICE._tcp.NAME, with no port: %w", item, ErrSource)
			}
			src.entries = append(src.entries, entry{host: item, srv: true})
			continue
		}
		host, port, err := net.SplitHostPort(item)
		if err != nil || host == "" || strings.ContainsAny(host, "/ ") {
			return Source{}, fmt.Errorf("fleet: --agents %q: %w", item, ErrSource)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return Source{}, fmt.Errorf("fleet: --agents %q: the port %q is not 1..65535: %w", item, port, ErrSource)
		}
		src.entries = append(src.entries, entry{host: host, port: port})
	}
	switch {
	case len(src.entries) == 0:
		return Source{}, fmt.Errorf("fleet: --agents %q: %w", spec, ErrSource)
	case len(src.entries) > MaxAddresses:
		return Source{}, fmt.Errorf("fleet: --agents: %d addresses, more than %d", len(src.entries), MaxAddresses)
	}
	return src, nil
}

// String is the source as given.
func (s Source) String() string { return s.spec }

// Static says the source needs no DNS: every entry is an IP address.
func (s Source) Static() bool {
	for _, e := range s.entries {
		if e.srv || net.ParseIP(e.host) == nil {
			return false
		}
	}
	return true
}

// Addr is one agent's address, and the name its certificate is checked
// against.
type Addr struct {
	// HostPort is the address dialled (an IP and a port once resolved).
	HostPort string
	// ServerName is the name the agent's certificate must hold: the
	// DNS name it was found under (an SRV record's target), the host
	// given for an IP.
	ServerName string
}

// Resolver is the part of *net.Resolver a Source uses.
type Resolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
	LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error)
}

// Resolve is every address the source names now, sorted, without
// duplicates. An entry that does not resolve is named in the error; the
// addresses of the others are returned beside it.
func (s Source) Resolve(ctx context.Context, r Resolver) ([]Addr, error) {
	var out []Addr
	var errs []error
	add := func(host, port, name string) error {
		if net.ParseIP(host) != nil {
			out = append(out, Addr{HostPort: net.JoinHostPort(host, port), ServerName: name})
			return nil
		}
		ips, err := r.LookupHost(ctx, host)
		if err != nil {
			return fmt.Errorf("fleet: resolve %s: %w", host, err)
		}
		for _, ip := range ips {
			out = append(out, Addr{HostPort: net.JoinHostPort(ip, port), ServerName: name})
		}
		return nil
	}
	for _, e := range s.entries {
		if !e.srv {
			if err := add(e.host, e.port, e.host); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		_, recs, err := r.LookupSRV(ctx, "", "", e.host)
		if err != nil {
			errs = append(errs, fmt.Errorf("fleet: resolve SRV %s: %w", e.host, err))
			continue
		}
		for _, rec := range recs {
			target := strings.TrimSuffix(rec.Target, ".")
			if err := add(target, strconv.Itoa(int(rec.Port)), target); err != nil {
				errs = append(errs, err)
			}
		}
		if len(out) > MaxAddresses {
			break
		}
	}
	slices.SortFunc(out, func(a, b Addr) int { return strings.Compare(a.HostPort, b.HostPort) })
	out = slices.CompactFunc(out, func(a, b Addr) bool { return a.HostPort == b.HostPort })
	if len(out) > MaxAddresses {
		out = out[:MaxAddresses]
		errs = append(errs, fmt.Errorf("fleet: --agents names more than %d addresses: the first %d followed", MaxAddresses, MaxAddresses))
	}
	return out, errors.Join(errs...)
}

// resolution is what one resolution of the source found: the agents'
// addresses, and why some could not be found (nil: all were).
type resolution struct {
	addrs []Addr
	err   error
}

// resolve sends the source's addresses to the loop, now and every
// ResolveEvery (once for a static source).
func (f *Fleet) resolve(ctx context.Context) {
	t := time.NewTicker(f.cfg.ResolveEvery)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
		addrs, err := f.cfg.Source.Resolve(rctx, f.cfg.Resolver)
		cancel()
		if err != nil && ctx.Err() == nil {
			f.cfg.Logf("%v", err)
		}
		select {
		case f.found <- resolution{addrs: addrs, err: err}:
		case <-ctx.Done():
			return
		}
		if f.cfg.Source.Static() {
			return
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}
