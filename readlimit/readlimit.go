// Package readlimit reads the files given to flags (a trace, a dataset, a
// key, a header, a certificate, the SSH server's keys) with a bound:
// a file named by mistake or on purpose (/dev/zero, a 1 GB log) is
// refused by its size, in a line, and costs at most the bound in memory,
// never all of it. A pipe or a process substitution (<(...)) is read as
// a file is, up to the bound. What a peer sends is held the same way:
// Reader bounds a body's bytes, JSONValues the values a decoder would
// make of it.
package readlimit

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// The bounds, by what a file holds. A real one is far below each.
const (
	// Secret bounds a key or a header value read from a file.
	Secret = 64 << 10
	// Schema bounds a JSON schema or a list of tool definitions.
	Schema = 1 << 20
	// Certs bounds a PEM bundle of certificates or a list of public keys.
	Certs = 4 << 20
	// Trace bounds a trace of arrivals (Mooncake's, Azure's: tens of MB).
	Trace = 256 << 20
	// Dataset bounds a dataset of prompts (ShareGPT's whole file is
	// 642 MB).
	Dataset = 1 << 30
	// Stream bounds what is read from a file that is no regular file (a
	// pipe, a device): its size is not known before it is read, so the
	// bound is what memory may hold, whatever it holds.
	Stream = 64 << 20
)

// ErrTooLarge is a file past its bound.
var ErrTooLarge = errors.New("larger than the most read")

// File reads path, at most max bytes (Stream at most from a file that is
// no regular file); a file larger than that is ErrTooLarge, read no
// further.
func File(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case fi.Mode().IsRegular() && fi.Size() > max:
		return nil, fmt.Errorf("%s: %d bytes, %w (%d)", path, fi.Size(), ErrTooLarge, max)
	case !fi.Mode().IsRegular():
		max = min(max, Stream)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %w (%d bytes)", path, ErrTooLarge, max)
	}
	return b, nil
}
