// Package door is the HTTP server of a door open to whoever reaches it
// (watch's --serve, the --metrics-addr exporter): a few connections at
// once, each idle for a while at most, its request read and its answer
// written in bounded time, its headers bounded. Without these, 15,000
// connections that each asked once and then kept silent were held for
// ever: 326 MB behind --serve, 290 MB behind --metrics-addr.
package door

import (
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// The door's bounds. A rollout tool or a Prometheus asks every few
// seconds on one or two connections.
const (
	// MaxConns is the most connections served at once; the next wait in
	// the kernel's queue until one closes.
	MaxConns = 64
	// Idle closes a connection that asks nothing for this long.
	Idle = 30 * time.Second
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes = 16 << 10
)

// Server is an http.Server of h with the door's time and header bounds;
// serve it on Limit's listener.
func Server(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, IdleTimeout: Idle, MaxHeaderBytes: MaxHeaderBytes}
}

// Limit is ln accepting at most MaxConns connections at once.
func Limit(ln net.Listener) net.Listener { return netutil.LimitListener(ln, MaxConns) }
