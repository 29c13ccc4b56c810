package agent

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecodeControl: whatever is posted to /control, DecodeControl never
// panics and refuses in one line; a control it takes was the whole body
// (one JSON object within MaxControlBytes), has a seq and a phase in
// bounds, re-encodes to a body taken as the same control, and its knobs
// and window are checked without a panic. The seeds are TestControl's
// bodies; plain go test runs only them.
func FuzzDecodeControl(f *testing.F) {
	knobs := `"knobs":{"mode":"open","concurrency":12,"rate":10,"prompt_tokens":32,"output_tokens":20,"paused":false,"speed":0}`
	for _, seed := range []string{
		`{"seq":1,` + knobs + `}`,
		`{"seq":2,` + knobs + `,"window_ms":60000}`,
		`{"seq":3,` + knobs + `,"window_ms":60000,"reset_seq":3}`,
		`{"seq":4,` + strings.Replace(knobs, `"open"`, `"sideways"`, 1) + `,"window_ms":7}`,
		`{"seq":4,"colour":"red"}`,
		`{"seq":4}{"seq":5}`,
		`{"knobs":null}`,
		`{"seq":4,"pad":"` + strings.Repeat("x", MaxControlBytes) + `"}`,
		`{"seq":4,"phase":-1}`,
		`{"seq":4,"phase":9}`,
		`{"seq":6,"finish":true}`,
		`{"seq":18446744073709551615}`,
		`{"seq":7,"reset_seq":9007199254740993}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := DecodeControl(bytes.NewReader(body))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("refused in more than a line: %v", err)
			}
			return
		}
		if len(body) > MaxControlBytes || !json.Valid(body) {
			t.Fatalf("taken from %d bytes that are not one JSON value: %.200q", len(body), body)
		}
		if c.Seq == 0 || c.Seq > MaxSeq || c.ResetSeq > MaxSeq || c.Phase < 0 || c.Phase > MaxPhase {
			t.Fatalf("taken: seq %d, phase %d", c.Seq, c.Phase)
		}
		var re bytes.Buffer
		enc := json.NewEncoder(&re)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(c); err != nil {
			t.Fatalf("a control taken does not re-encode: %v", err)
		}
		// A mode of U+2028s re-encodes escaped, six bytes each: past the
		// bound, refused as any body that long is.
		if re.Len() <= MaxControlBytes {
			again, err := DecodeControl(&re)
			if err != nil || !reflect.DeepEqual(again, c) {
				t.Fatalf("re-encoded: %+v, %v; want %+v", again, err, c)
			}
		}
		_, _ = c.window()
		if c.Knobs != nil {
			if k, err := c.Knobs.Load(); err == nil {
				_ = Share{Index: 1, Of: 3}.CheckKnobs(k)
			}
		}
	})
}
