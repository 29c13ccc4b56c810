package load

import "github.com/infertop/infertop/probe"

// traceOf is the trace context of request n under seed: three words of
// splitmix64 from a stream of the seed's own, so that a seeded run sends
// the same trace ids again (a run and its rerun line up in a tracing
// backend) without a generator allocated per request.
func traceOf(seed, n uint64) probe.TraceContext {
	x := seed ^ 0x7ace1d5eed0fbeef + n*3*0x9e3779b97f4a7c15
	return probe.NewTraceContext(splitmix(&x), splitmix(&x), splitmix(&x))
}

// splitmix64's step: advances x and returns its next word.
func splitmix(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
