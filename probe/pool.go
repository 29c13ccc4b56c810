package probe

import (
	"bufio"
	"io"
	"sync"

	"github.com/valyala/fastjson"
)

// readBufSize is the stream reader's buffer: most messages fit many times.
const readBufSize = 32 << 10

// streamState is one request's reading state, reused across requests: a
// fresh 32 KiB buffer and parser per request were most of the client's
// allocation at a thousand streams, and so most of the garbage collector's
// work (each cycle scans every stream's goroutine stacks).
type streamState struct {
	br     *bufio.Reader
	sse    SSEReader
	nd     NDJSONReader
	parser parser
}

// parser is what the protocols parse messages with: a reused JSON parser
// and the fast path's memory of the stream's last chunk.
type parser struct {
	json fastjson.Parser
	memo chunkMemo
}

var streamStates = sync.Pool{New: func() any { return &streamState{br: bufio.NewReaderSize(nil, readBufSize)} }}

// getStreamState returns a reading state for body; release it when done
// with everything it returned (messages, parsed values).
func getStreamState(body io.Reader) *streamState {
	s := streamStates.Get().(*streamState)
	s.br.Reset(body)
	s.sse = SSEReader{r: s.br, data: s.sse.data[:0], long: s.sse.long[:0]}
	s.nd = NDJSONReader{r: s.br, long: s.nd.long[:0]}
	s.parser.memo.valid = false // a new stream
	return s
}

// release returns s to the pool, dropping buffers a rare long line grew
// (up to MaxLineBytes) so the pool does not hold them.
func (s *streamState) release() {
	s.br.Reset(nil)
	const keep = 64 << 10
	if cap(s.sse.data) > keep {
		s.sse.data = nil
	}
	if cap(s.sse.long) > keep {
		s.sse.long = nil
	}
	if cap(s.nd.long) > keep {
		s.nd.long = nil
	}
	streamStates.Put(s)
}
