package probe

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// NDJSONReader reads newline-delimited JSON: one message a line, LF or
// CRLF, blank lines skipped, lines up to MaxLineBytes.
type NDJSONReader struct {
	r    *bufio.Reader
	long []byte
	// Partial is true when the line last returned had no newline: the
	// stream ended there, perhaps cut mid-message.
	Partial bool
}

// NewNDJSONReader reads lines from r.
func NewNDJSONReader(r io.Reader) *NDJSONReader {
	return &NDJSONReader{r: bufio.NewReaderSize(r, readBufSize)}
}

// Next returns the next non-blank line, valid until the next call. At the
// end it returns io.EOF; a last line without its newline is still returned
// (Ollama ends that way), so a cut shows up as a parse error or a missing
// final message, not here.
func (n *NDJSONReader) Next() ([]byte, error) {
	for {
		line, err := readRawLine(n.r, &n.long)
		if err == ErrLineTooLong {
			return nil, err
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("read stream: %w", err)
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			n.Partial = err == io.EOF
			return t, nil
		}
		if err == io.EOF {
			return nil, io.EOF
		}
	}
}
