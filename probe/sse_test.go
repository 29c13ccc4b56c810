package probe

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func readAll(t *testing.T, in string) ([]Event, error) {
	t.Helper()
	r := NewSSEReader(strings.NewReader(in))
	var evs []Event
	for {
		ev, err := r.Next()
		if err != nil {
			if err == io.EOF {
				return evs, nil
			}
			return evs, err
		}
		evs = append(evs, Event{Name: ev.Name, Data: append([]byte(nil), ev.Data...)})
	}
}

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // "name|data"
		err  error
	}{
		{"simple", "data: a\n\ndata: b\n\n", []string{"|a", "|b"}, nil},
		{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []string{"|a", "|b"}, nil},
		{"comments and keep-alives", ": ping\n\ndata: a\n\n: keep-alive\n\n", []string{"|a"}, nil},
		{"multi-line data", "data: a\ndata: b\n\n", []string{"|a\nb"}, nil},
		{"no space after colon", "data:a\n\n", []string{"|a"}, nil},
		{"event name", "event: error\ndata: {\"x\":1}\n\ndata: y\n\n", []string{"error|{\"x\":1}", "|y"}, nil},
		{"id and retry ignored", "id: 7\nretry: 100\ndata: a\n\n", []string{"|a"}, nil},
		{"blank lines without data", "\n\n\ndata: a\n\n", []string{"|a"}, nil},
		{"missing final blank line", "data: a\n\ndata: [DONE]\n", []string{"|a", "|[DONE]"}, nil},
		{"cut mid-line", "data: a\n\ndata: {\"cho", []string{"|a"}, io.ErrUnexpectedEOF},
		{"empty data field", "data\n\n", []string{"|"}, nil},
		{"empty stream", "", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := readAll(t, tt.in)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			var got []string
			for _, ev := range evs {
				got = append(got, ev.Name+"|"+string(ev.Data))
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("events = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSSEReaderLongLines(t *testing.T) {
	big := strings.Repeat("x", 100<<10)
	evs, err := readAll(t, "data: "+big+"\n\n")
	if err != nil || len(evs) != 1 || len(evs[0].Data) != len(big) {
		t.Fatalf("100 KiB line: %d events, err %v", len(evs), err)
	}
	_, err = readAll(t, "data: "+strings.Repeat("y", MaxLineBytes+10)+"\n\n")
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("huge line: err = %v, want ErrLineTooLong", err)
	}
}

func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"data: a\n\n", "data: a\r\ndata: b\r\n\r\n", ": c\n\nevent: error\ndata: {}\n\n",
		"data: {\"choices\":[]}\n\ndata: [DONE]\n\n", "data", "\r\n\r\n:", "data: x\ndata",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewSSEReader(strings.NewReader(string(in)))
		total := 0
		for i := 0; ; i++ {
			ev, err := r.Next()
			if err != nil {
				break
			}
			total += len(ev.Data)
			if total > len(in) {
				t.Fatalf("read %d data bytes from %d input bytes", total, len(in))
			}
			if i > len(in)+1 {
				t.Fatalf("more events than input bytes")
			}
		}
	})
}

func BenchmarkSSEReader(b *testing.B) {
	msg := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"word "},"finish_reason":null}]}` + "\n\n"
	in := strings.Repeat(msg, 1000)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewSSEReader(strings.NewReader(in))
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/msg")
}
