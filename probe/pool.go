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
	// timings parses the messages that carry the server's timings
	// (readServerTimings): apart from parser, whose values the message's
	// other readings may still hold.
	timings fastjson.Parser
	// bigParse is set by a reader that handed the parser a message longer
	// than keepBytes from a buffer of its own (readWhole's).
	bigParse bool
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

// keepBytes is the most a pooled reading state keeps of what a request
// grew: a buffer (or parser) past it was grown by a rare long message, up
// to MaxLineBytes, and is dropped rather than pooled, so a server sending
// such messages costs memory for the requests that read them, not for
// every idle state in the pool ever after.
const keepBytes = 64 << 10

// release returns s to the pool, dropping what a long message grew.
func (s *streamState) release() {
	s.br.Reset(nil)
	s.shrink()
	streamStates.Put(s)
}

// shrink drops the buffers and the parser a long message grew past
// keepBytes.
func (s *streamState) shrink() {
	big := s.bigParse || cap(s.sse.data) > keepBytes || cap(s.sse.long) > keepBytes || cap(s.nd.long) > keepBytes
	if cap(s.sse.data) > keepBytes {
		s.sse.data = nil
	}
	if cap(s.sse.long) > keepBytes {
		s.sse.long = nil
	}
	if cap(s.nd.long) > keepBytes {
		s.nd.long = nil
	}
	if m := &s.parser.memo; big || cap(m.prefix) > keepBytes || cap(m.mid) > keepBytes || cap(m.tail) > keepBytes {
		// fastjson keeps a copy of the last message and a slot for every
		// value it held (16 MiB of [0,0,...] is eight million of them):
		// a parser that read a long message starts afresh.
		s.parser = parser{}
	}
	s.bigParse = false
}
