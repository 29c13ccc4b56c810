package probe

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxLineBytes bounds one line of a stream, so a hostile or broken server
// cannot make the reader hold an unbounded line in memory. It is a small
// multiple of the longest lines real servers send: their chunks are a few
// hundred bytes, their last messages up to a few KB (llama.cpp's settings
// and timings), or the whole answer or the prompt's token ids (TGI's
// generated_text, Ollama's context: about 200 KB at 32k tokens). At 16 MiB,
// 64 streams of endless lines held 1.8 GB between them.
const MaxLineBytes = 1 << 20

// ErrLineTooLong is returned for a stream line longer than MaxLineBytes.
var ErrLineTooLong = errors.New("stream line longer than 1 MiB (the cap on one line)")

// MaxEventBytes bounds the data of one server-sent event: the lines of an
// event are joined until its blank line, so capping each line alone let an
// event of endless short data lines grow without end (1.9 GB in ten
// seconds at two streams). It is the line cap: an event's data is never
// legitimately larger than the one line most servers send it as.
const MaxEventBytes = MaxLineBytes

// ErrEventTooLong is returned for an event whose data passes MaxEventBytes.
var ErrEventTooLong = errors.New("stream event larger than 1 MiB (the cap on one event's data)")

// Event is one server-sent event. Data is valid until the next call to Next.
type Event struct {
	Name string
	Data []byte
}

// SSEReader reads server-sent events (the text/event-stream format): fields
// "data", "event" and llama.cpp's "error" (others ignored), comments, LF or
// CRLF line ends, several data lines joined with "\n", events ended by a
// blank line.
type SSEReader struct {
	r       *bufio.Reader
	data    []byte
	name    string
	hasData bool
	long    []byte
}

// NewSSEReader reads events from r.
func NewSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{r: bufio.NewReaderSize(r, readBufSize)}
}

// Next returns the next event. At the end of the stream it returns io.EOF;
// a stream cut in the middle of a line returns io.ErrUnexpectedEOF; an
// event whose data would pass MaxEventBytes returns ErrEventTooLong (the
// reader is of no further use then). Data lines complete at the end of the
// stream but missing their blank line are still delivered, since several
// servers end that way.
func (s *SSEReader) Next() (Event, error) {
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && s.hasData {
				return s.dispatch(), nil
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if s.hasData {
				return s.dispatch(), nil
			}
			s.name = ""
			continue
		}
		if line[0] == ':' {
			continue // a comment, often a keep-alive
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			// Checked before the append, so the buffer never grows past
			// the cap to learn that it has.
			if len(s.data)+1+len(value) > MaxEventBytes {
				return Event{}, ErrEventTooLong
			}
			if !s.hasData && s.blankNext() {
				// The usual event, one data line and its blank line, both
				// read already: its data is the line itself, valid until
				// the next read, as Data is, and not copied.
				ev := Event{Name: s.name, Data: value}
				s.name = ""
				return ev, nil
			}
			if s.hasData {
				s.data = append(s.data, '\n')
			}
			s.data = appendDoubling(s.data, value, MaxEventBytes)
			s.hasData = true
		case "event":
			s.name = string(value)
		case "error":
			// llama.cpp's server reports a failure mid-stream as an
			// "error:" line rather than an event named error.
			s.data = append(s.data[:0], value...)
			s.hasData, s.name = true, "error"
		}
	}
}

// blankNext reports whether the reader's buffer holds a blank line next,
// and consumes it if so, without reading further (which would move the
// buffer under the line just returned).
func (s *SSEReader) blankNext() bool {
	n := s.r.Buffered()
	if n == 0 {
		return false
	}
	b, _ := s.r.Peek(min(n, 2))
	switch {
	case b[0] == '\n':
		s.r.Discard(1) //nolint:errcheck // buffered: cannot fail
		return true
	case len(b) == 2 && b[0] == '\r' && b[1] == '\n':
		s.r.Discard(2) //nolint:errcheck // buffered: cannot fail
		return true
	}
	return false
}

func (s *SSEReader) dispatch() Event {
	ev := Event{Name: s.name, Data: s.data}
	s.data = s.data[:0] // reused: Data is valid until the next call
	s.name = ""
	s.hasData = false
	return ev
}

// readLine returns one line without its line end. The slice is valid until
// the next read.
func (s *SSEReader) readLine() ([]byte, error) {
	line, err := readRawLine(s.r, &s.long)
	if err == ErrLineTooLong {
		return nil, err
	}
	if err != nil {
		if err == io.EOF {
			if len(line) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, io.EOF
		}
		return nil, fmt.Errorf("read stream: %w", err)
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// readRawLine reads up to and including the next '\n' (or to the end), past
// the reader's buffer when need be, up to MaxLineBytes; long is the
// caller's scratch buffer. The slice is valid until the next read.
func readRawLine(r *bufio.Reader, long *[]byte) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return line, err
	}
	*long = append((*long)[:0], line...)
	for err == bufio.ErrBufferFull {
		line, err = r.ReadSlice('\n')
		if len(*long)+len(line) > MaxLineBytes {
			return nil, ErrLineTooLong
		}
		*long = appendDoubling(*long, line, MaxLineBytes)
	}
	return *long, err
}

// appendDoubling appends add to b, growing it by doubling up to limit (and
// then to what it needs): append grows a large slice by a quarter at a
// time, which allocates five times the line in all on the way to a long
// one (a 1 MiB line cost 5 MiB, 64 endless streams 336 MiB), doubling
// twice.
func appendDoubling(b, add []byte, limit int) []byte {
	if n := len(b) + len(add); n > cap(b) {
		c := max(min(max(2*cap(b), n), limit), n)
		nb := make([]byte, len(b), c)
		copy(nb, b)
		b = nb
	}
	return append(b, add...)
}
