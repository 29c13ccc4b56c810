package fleet

import (
	"context"

	"github.com/infertop/infertop/discover"
)

// resolution is what one resolution of the source found: the agents'
// addresses, and why some could not be found (nil: all were).
type resolution struct {
	addrs []discover.Addr
	err   error
}

// resolve sends the source's addresses to the loop, now and every
// ResolveEvery (once for a static source).
func (f *Fleet) resolve(ctx context.Context) {
	f.cfg.Source.Follow(ctx, f.cfg.Resolver, f.cfg.ResolveEvery, f.cfg.Timeout, func(addrs []discover.Addr, err error) bool {
		if err != nil {
			f.cfg.Logf("%v", err)
		}
		select {
		case f.found <- resolution{addrs: addrs, err: err}:
			return true
		case <-ctx.Done():
			return false
		}
	})
}
