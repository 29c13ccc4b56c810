// Package crash turns a panic in any goroutine infertop owns into an
// orderly exit: while the dashboard holds the terminal (raw mode, the
// alternate screen), an unrecovered panic would leave it unusable and its
// message lost in the alternate screen. Each goroutine defers Recover; the
// dashboard installs a Handler (termguard.Install) that restores the
// terminal, prints the panic and its stack, and exits. With no handler
// installed (headless runs, the sim, tests) Recover lets the panic go on as
// Go's own. crash imports only the standard library: the engine defers
// Recover in every worker, and must not link a terminal library for it.
package crash

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Handler is given the panic's value and the stack of the goroutine that
// panicked. It must not return normally: it ends the process.
type Handler func(value any, stack []byte)

var (
	handler  atomic.Pointer[Handler]
	crashing atomic.Bool
	once     sync.Once
)

// Handle installs h for the panics Recover catches; nil uninstalls it.
func Handle(h Handler) {
	if h == nil {
		handler.Store(nil)
		return
	}
	handler.Store(&h)
}

// Crashing reports whether a handler has been given a panic: code that
// would report an ordinary error (the dashboard's Run returning because the
// handler stopped it) waits instead, so the panic is what gets printed.
func Crashing() bool { return crashing.Load() }

// Recover, deferred at the top of a goroutine, hands a panic to the
// installed handler. The first panic is handled; a goroutine that panics
// while another is being handled waits for the process to end.
func Recover() {
	h := handler.Load()
	if h == nil {
		return // no recover(): the panic goes on, with its own stack
	}
	if r := recover(); r != nil {
		crashing.Store(true)
		stack := debug.Stack()
		once.Do(func() { (*h)(r, stack) })
		select {}
	}
}
