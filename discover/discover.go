// Package discover turns a list of targets into addresses, again and
// again: host:port items, DNS names whose every A/AAAA record is a target
// at the given port, and SRV names whose records name each target's host
// and port. The agents' follower (fleet) finds its agents through it, and
// infertop watch its servers.
package discover

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

// MaxAddresses bounds the addresses one source names (a list, or what
// its DNS names resolve to): a hostile DNS answer cannot grow a
// follower's roster past it.
const MaxAddresses = 10000

// Source is a parsed list of targets: host:port items, each an IP or a
// DNS name whose A/AAAA records are every target at that port, or SRV
// names (_metrics._tcp.vllm.NAMESPACE.svc), whose records name each
// target's host and port. DNS names are resolved again on every Resolve,
// so targets that come and go are followed.
type Source struct {
	spec    string
	entries []entry
}

// entry is one item of a source: host:port, or an SRV name.
type entry struct {
	host, port string
	srv        bool
}

// ErrSource is a value that names no targets.
var ErrSource = errors.New("want host:port,host:port, a DNS name with a port (NAME:PORT), or an SRV name (_SERVICE._tcp.NAME)")

// SourceError is a source refused: Item is the part of it refused (the
// whole value when it names nothing), Why the reason. A flag's binder
// names its flag before Item.
type SourceError struct {
	Item string
	Why  error
}

func (e *SourceError) Error() string { return fmt.Sprintf("discover: %q: %v", e.Item, e.Why) }

// Unwrap is the reason, ErrSource for a value of the wrong shape.
func (e *SourceError) Unwrap() error { return e.Why }

// ParseSource reads a list of targets, items separated by commas.
func ParseSource(spec string) (Source, error) {
	src := Source{spec: spec}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if strings.HasPrefix(item, "_") {
			if !strings.Contains(item, "._tcp.") || strings.ContainsAny(item, ":/ ") {
				return Source{}, &SourceError{item, fmt.Errorf("an SRV name is _SERVICE._tcp.NAME, with no port: %w", ErrSource)}
			}
			src.entries = append(src.entries, entry{host: item, srv: true})
			continue
		}
		host, port, err := net.SplitHostPort(item)
		if err != nil || host == "" || strings.ContainsAny(host, "/ ") {
			return Source{}, &SourceError{item, ErrSource}
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return Source{}, &SourceError{item, fmt.Errorf("the port %q is not 1..65535: %w", port, ErrSource)}
		}
		src.entries = append(src.entries, entry{host: host, port: port})
	}
	switch {
	case len(src.entries) == 0:
		return Source{}, &SourceError{spec, ErrSource}
	case len(src.entries) > MaxAddresses:
		return Source{}, &SourceError{fmt.Sprintf("%.40s...", spec), fmt.Errorf("%d addresses, more than %d", len(src.entries), MaxAddresses)}
	}
	return src, nil
}

// String is the source as given.
func (s Source) String() string { return s.spec }

// Empty says the source names nothing: the zero Source.
func (s Source) Empty() bool { return len(s.entries) == 0 }

// Static says the source needs no DNS: every entry is an IP address.
func (s Source) Static() bool {
	for _, e := range s.entries {
		if e.srv || net.ParseIP(e.host) == nil {
			return false
		}
	}
	return true
}

// Addr is one target's address, and the name its certificate is checked
// against.
type Addr struct {
	// HostPort is the address dialled (an IP and a port once resolved).
	HostPort string
	// ServerName is the name the target's certificate must hold: the
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
// duplicates, at most MaxAddresses. An entry that does not resolve is
// named in the error; the addresses of the others are returned beside it.
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
			return fmt.Errorf("discover: resolve %s: %w", host, err)
		}
		for _, ip := range ips {
			out = append(out, Addr{HostPort: net.JoinHostPort(ip, port), ServerName: name})
		}
		return nil
	}
	for _, e := range s.entries {
		if len(out) > MaxAddresses {
			break
		}
		if !e.srv {
			if err := add(e.host, e.port, e.host); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		_, recs, err := r.LookupSRV(ctx, "", "", e.host)
		if err != nil {
			errs = append(errs, fmt.Errorf("discover: resolve SRV %s: %w", e.host, err))
			continue
		}
		for _, rec := range recs {
			if len(out) > MaxAddresses {
				break
			}
			target := strings.TrimSuffix(rec.Target, ".")
			if err := add(target, strconv.Itoa(int(rec.Port)), target); err != nil {
				errs = append(errs, err)
			}
		}
	}
	slices.SortFunc(out, func(a, b Addr) int { return strings.Compare(a.HostPort, b.HostPort) })
	out = slices.CompactFunc(out, func(a, b Addr) bool { return a.HostPort == b.HostPort })
	if len(out) > MaxAddresses {
		out = out[:MaxAddresses]
		errs = append(errs, fmt.Errorf("discover: %s names more than %d addresses: the first %d followed", s.spec, MaxAddresses, MaxAddresses))
	}
	return out, errors.Join(errs...)
}

// Follow resolves the source now and every `every` after (once for a
// static source), each time within timeout, and hands each resolution to
// found. It returns when ctx ends or found returns false.
func (s Source) Follow(ctx context.Context, r Resolver, every, timeout time.Duration, found func([]Addr, error) bool) {
	Repeat(ctx, every, timeout, func(ctx context.Context) bool {
		addrs, err := s.Resolve(ctx, r)
		return found(addrs, err) && !s.Static()
	})
}

// Repeat calls look now and every `every` after, each call within
// timeout (look's context), until ctx ends or look returns false: the
// loop of every source of targets that is looked at again.
func Repeat(ctx context.Context, every, timeout time.Duration, look func(context.Context) bool) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		lctx, cancel := context.WithTimeout(ctx, timeout)
		again := ctx.Err() == nil && look(lctx)
		cancel()
		if !again || ctx.Err() != nil {
			return
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}
