package load

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/infertop/infertop/readlimit"
)

// TraceBlockTokens is the length of one prefix block a Mooncake trace's
// hash_ids name: requests that share a hash id share that block's
// prompt tokens byte for byte.
const TraceBlockTokens = 512

// The trace formats LoadTrace reads, as TraceOptions.Format names them.
const (
	TraceMooncake = "mooncake" // JSONL: timestamp (ms), input_length, output_length, hash_ids
	TraceAzure    = "azure"    // CSV: TIMESTAMP (a date-time), ContextTokens, GeneratedTokens
	TraceBurstGPT = "burstgpt" // CSV: Timestamp (s), Model, Request tokens, Response tokens, ...
	TraceJSONL    = "jsonl"    // JSONL: at (s), prompt or prompt_tokens, max_tokens
)

// MaxTraceSpan bounds the times of a trace's arrivals from its first: a
// year (BurstGPT's spans two months, Azure's a week). Past it a time is
// refused, in a line, before it can overflow a schedule's nanoseconds.
const MaxTraceSpan = 366 * 24 * time.Hour

// TraceFormats lists the formats a trace may be read as.
func TraceFormats() []string { return []string{TraceMooncake, TraceAzure, TraceBurstGPT, TraceJSONL} }

// Trace is a recorded load to replay: arrivals at their times, each with
// its lengths (and, in the Mooncake format, the prefix blocks it shares
// with others). A Trace is read only once loaded: engines may share one.
type Trace struct {
	// Name is the file's base name; Format the format it was read as.
	Name, Format string
	// Entries are the arrivals, in time order, from the first at 0 (or
	// from the window's start).
	Entries []TraceEntry
	// Span is one pass through the trace: the window's length when it has
	// an end, else the last arrival plus one mean gap, so that a loop
	// keeps the trace's rate across the seam.
	Span time.Duration
	// Skipped counts the rows left out as failed requests (BurstGPT's,
	// with no response tokens); Filtered those left out by the model
	// filter or the window.
	Skipped, Filtered int
	// Loop starts the trace again at its end instead of ending the run.
	Loop bool

	whole *wholeTrace // a share's whole (Share; nil: the trace is whole)
}

// TraceEntry is one arrival of a trace.
type TraceEntry struct {
	// At is its time from the trace's start.
	At time.Duration
	// Input is its prompt length in tokens, Output its output limit.
	Input, Output int
	// HashIDs name its prompt's TraceBlockTokens-token blocks, in order
	// (Mooncake); the last may be partial.
	HashIDs []int64
	// Prompt is its prompt's text when the trace gives it (the plain
	// JSONL format); Input is then its length in words.
	Prompt string

	turn *conversation // a session's turn, not a trace's (nil)
}

// TraceOptions say how a trace file is read.
type TraceOptions struct {
	// Format is one of TraceFormats, or "" to tell it from the file.
	Format string
	// Model keeps only the rows of this model (BurstGPT's Model column;
	// "" keeps all).
	Model string
	// From and To take the slice [From, To) of the trace's time (To 0: to
	// its end); the slice is replayed from its own start.
	From, To time.Duration
	// Loop repeats the trace.
	Loop bool
}

// ParseTraceWindow reads FROM-TO, two durations from the trace's start,
// either of which may be left out ("1m-2m", "30s-", "-5m"); a bare
// number is seconds.
func ParseTraceWindow(s string) (from, to time.Duration, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(s, "-")
	bad := fmt.Errorf("bad trace window %q: want FROM-TO, durations from the trace's start such as 1m-2m30s, 30s- or -5m", s)
	if !ok {
		return 0, 0, bad
	}
	dur := func(v string) (time.Duration, bool) {
		v = strings.TrimSpace(v)
		if v == "" {
			return 0, true
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f < 1e9 {
			return time.Duration(f * float64(time.Second)), true
		}
		d, err := time.ParseDuration(v)
		return d, err == nil && d >= 0
	}
	var okA, okB bool
	from, okA = dur(a)
	to, okB = dur(b)
	if !okA || !okB || to != 0 && to <= from {
		return 0, 0, bad
	}
	return from, to, nil
}

// LoadTrace reads a trace file. Its errors are *SettingError
// (SettingTrace), one line that names the file and, for a bad row, the
// line it is on.
func LoadTrace(path string, o TraceOptions) (*Trace, error) {
	fail := func(err error) (*Trace, error) {
		return nil, &SettingError{SettingTrace, fmt.Errorf("%s: %w", path, err)}
	}
	if o.Format != "" && !slices.Contains(TraceFormats(), o.Format) {
		return nil, &SettingError{SettingTrace, fmt.Errorf("unknown trace format %q (have %s)", o.Format, strings.Join(TraceFormats(), ", "))}
	}
	data, err := readlimit.File(path, readlimit.Trace)
	if err != nil {
		return nil, &SettingError{SettingTrace, err}
	}
	t, err := parseTrace(data, o)
	if err != nil {
		return fail(err)
	}
	t.Name, t.Loop = filepath.Base(path), o.Loop
	return t, nil
}

// parseTrace reads a trace from data (see LoadTrace).
func parseTrace(data []byte, o TraceOptions) (*Trace, error) {
	format := o.Format
	if format == "" {
		format = sniffTrace(data)
	}
	t := &Trace{Format: format}
	var err error
	switch format {
	case TraceMooncake, TraceJSONL:
		err = t.readJSONL(data)
	case TraceAzure, TraceBurstGPT:
		err = t.readCSV(data, o.Model)
	default:
		return nil, errors.New("not a trace: want JSONL (Mooncake's or {\"at\",\"prompt_tokens\"}) or CSV (Azure's or BurstGPT's)")
	}
	if err != nil {
		return nil, err
	}
	if len(t.Entries) == 0 {
		return nil, errors.New("no requests in it")
	}
	slices.SortStableFunc(t.Entries, func(a, b TraceEntry) int { return cmp.Compare(a.At, b.At) })
	// The trace starts at its first arrival (Azure's are date-times,
	// BurstGPT's first is seconds in), and the window counts from there.
	t0 := t.Entries[0].At
	if span := t.Entries[len(t.Entries)-1].At - t0; span > MaxTraceSpan {
		return nil, fmt.Errorf("its arrivals span %v, past the %v a replay schedules", span.Round(time.Hour), MaxTraceSpan)
	}
	for i := range t.Entries {
		t.Entries[i].At -= t0
	}
	if o.From > 0 || o.To > 0 {
		kept := t.Entries[:0]
		for _, en := range t.Entries {
			if en.At >= o.From && (o.To == 0 || en.At < o.To) {
				en.At -= o.From
				kept = append(kept, en)
			}
		}
		t.Filtered += len(t.Entries) - len(kept)
		t.Entries = kept
		if len(t.Entries) == 0 {
			return nil, fmt.Errorf("no requests within the window %v-%v", o.From, o.To)
		}
	}
	last := t.Entries[len(t.Entries)-1].At
	switch {
	case o.To > 0:
		t.Span = o.To - o.From
	case len(t.Entries) > 1:
		t.Span = last + last/time.Duration(len(t.Entries)-1)
	}
	t.Span = max(t.Span, last+time.Millisecond)
	return t, nil
}

// sniffTrace tells a trace's format from its first line.
func sniffTrace(data []byte) string {
	line, _, _ := bytes.Cut(bytes.TrimLeft(data, " \t\r\n\ufeff"), []byte("\n"))
	line = bytes.TrimSpace(line)
	if len(line) > 0 && line[0] == '{' {
		var probe map[string]json.RawMessage
		if json.Unmarshal(line, &probe) == nil {
			if _, ok := probe["timestamp"]; ok {
				return TraceMooncake
			}
			return TraceJSONL
		}
		return TraceJSONL // its error, with its line, comes from the reader
	}
	head := strings.ToLower(string(line))
	switch {
	case strings.Contains(head, "contexttokens"):
		return TraceAzure
	case strings.Contains(head, "response tokens"):
		return TraceBurstGPT
	}
	return ""
}

// readJSONL reads Mooncake's JSONL or the plain one, by t.Format.
func (t *Trace) readJSONL(data []byte) error {
	return jsonLines(data, func(n int, line []byte) error {
		var row struct {
			Timestamp    *float64 `json:"timestamp"`
			InputLength  *int     `json:"input_length"`
			OutputLength *int     `json:"output_length"`
			HashIDs      []int64  `json:"hash_ids"`
			At           *float64 `json:"at"`
			Prompt       *string  `json:"prompt"`
			PromptTokens *int     `json:"prompt_tokens"`
			MaxTokens    *int     `json:"max_tokens"`
		}
		if err := json.Unmarshal(line, &row); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		var en TraceEntry
		if t.Format == TraceMooncake {
			switch {
			case row.Timestamp == nil || row.InputLength == nil || row.OutputLength == nil:
				return fmt.Errorf(`line %d: want "timestamp", "input_length" and "output_length"`, n)
			case !(*row.Timestamp >= 0 && *row.Timestamp <= float64(MaxTraceSpan/time.Millisecond)):
				return fmt.Errorf("line %d: the timestamp %v is not a time in ms from the start", n, *row.Timestamp)
			case *row.InputLength < 1 || *row.OutputLength < 1:
				return fmt.Errorf("line %d: input_length %d and output_length %d must be at least 1", n, *row.InputLength, *row.OutputLength)
			}
			en = TraceEntry{At: time.Duration(*row.Timestamp * float64(time.Millisecond)), Input: *row.InputLength, Output: *row.OutputLength, HashIDs: row.HashIDs}
		} else {
			switch {
			case row.At == nil:
				return fmt.Errorf(`line %d: no "at" (seconds from the start)`, n)
			case !(*row.At >= 0 && *row.At <= MaxTraceSpan.Seconds()):
				return fmt.Errorf("line %d: the time %v is not seconds from the start", n, *row.At)
			case (row.Prompt == nil) == (row.PromptTokens == nil):
				return fmt.Errorf(`line %d: want one of "prompt" and "prompt_tokens"`, n)
			case row.Prompt != nil && strings.TrimSpace(*row.Prompt) == "":
				return fmt.Errorf("line %d: the prompt is empty", n)
			case row.PromptTokens != nil && *row.PromptTokens < 1:
				return fmt.Errorf("line %d: prompt_tokens %d must be at least 1", n, *row.PromptTokens)
			case row.MaxTokens != nil && *row.MaxTokens < 1:
				return fmt.Errorf("line %d: max_tokens %d must be at least 1", n, *row.MaxTokens)
			}
			en = TraceEntry{At: time.Duration(*row.At * float64(time.Second)), Output: DefaultOutputTokens}
			if row.MaxTokens != nil {
				en.Output = *row.MaxTokens
			}
			if row.Prompt != nil {
				en.Prompt, en.Input = *row.Prompt, len(strings.Fields(*row.Prompt))
			} else {
				en.Input = *row.PromptTokens
			}
		}
		t.Entries = append(t.Entries, en)
		return nil
	})
}

// jsonLines calls fn with every line of data that is not blank, and its
// number from 1, until fn fails.
func jsonLines(data []byte, fn func(n int, line []byte) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			if err := fn(n, line); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading: %w", err)
	}
	return nil
}

// azureLayouts are the date-times Azure's traces write ("2023-11-16
// 18:15:46.6805900"), with or without a zone.
var azureLayouts = []string{"2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999 -0700 MST", time.RFC3339Nano}

// readCSV reads Azure's or BurstGPT's CSV, by t.Format, keeping only the
// rows of model when given (BurstGPT).
func (t *Trace) readCSV(data []byte, model string) error {
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\ufeff"))))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	head, err := r.Read()
	if err != nil {
		return fmt.Errorf("line 1: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	want := []string{"timestamp", "contexttokens", "generatedtokens"}
	if t.Format == TraceBurstGPT {
		want = []string{"timestamp", "model", "request tokens", "response tokens"}
	}
	idx := make([]int, len(want))
	for i, w := range want {
		c, ok := col[w]
		if !ok {
			return fmt.Errorf("line 1: the header has no %q column (want %s)", w, strings.Join(want, ", "))
		}
		idx[i] = c
	}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return fmt.Errorf("line %d: %w", pe.Line, pe.Err)
			}
			return fmt.Errorf("reading: %w", err)
		}
		line, _ := r.FieldPos(0)
		field := func(i int) (string, error) {
			if idx[i] >= len(rec) {
				return "", fmt.Errorf("line %d: no %q field", line, want[i])
			}
			return strings.TrimSpace(rec[idx[i]]), nil
		}
		num := func(i int) (int, error) {
			v, err := field(i)
			if err != nil {
				return 0, err
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("line %d: %s %q is not a count of tokens", line, want[i], v)
			}
			return n, nil
		}
		ts, err := field(0)
		if err != nil {
			return err
		}
		var en TraceEntry
		if t.Format == TraceAzure {
			var at time.Time
			for _, l := range azureLayouts {
				if at, err = time.Parse(l, ts); err == nil {
					break
				}
			}
			if err != nil {
				return fmt.Errorf("line %d: TIMESTAMP %q is not a date-time such as 2023-11-16 18:15:46.6805900", line, ts)
			}
			if y := at.Year(); y < 1970 || y > 2200 { // past int64 nanoseconds (years 1 and 9999)
				return fmt.Errorf("line %d: TIMESTAMP %q is not within the years 1970-2200", line, ts)
			}
			en.At = time.Duration(at.UnixNano()) // made relative to the first by parseTrace
			if en.Input, err = num(1); err != nil {
				return err
			}
			if en.Output, err = num(2); err != nil {
				return err
			}
		} else {
			sec, perr := strconv.ParseFloat(ts, 64)
			if perr != nil || !(sec >= 0 && sec <= MaxTraceSpan.Seconds()) {
				return fmt.Errorf("line %d: Timestamp %q is not seconds from the start", line, ts)
			}
			en.At = time.Duration(sec * float64(time.Second))
			m, _ := field(1)
			if en.Input, err = num(2); err != nil {
				return err
			}
			if en.Output, err = num(3); err != nil {
				return err
			}
			if model != "" && !strings.EqualFold(m, model) {
				t.Filtered++
				continue
			}
			if en.Output == 0 { // a failed request: BurstGPT logs it with no response
				t.Skipped++
				continue
			}
		}
		en.Input, en.Output = max(en.Input, 1), max(en.Output, 1)
		t.Entries = append(t.Entries, en)
	}
}

// means are the trace's mean prompt and output lengths (a share's: the
// whole's) and its mean rate (arrivals per second of its span).
func (t *Trace) means() (input, output int, rate float64) {
	n := float64(len(t.Entries))
	if w := t.whole; w != nil {
		return w.input, w.output, n / t.Span.Seconds()
	}
	var in, out float64
	for _, en := range t.Entries {
		in += float64(en.Input)
		out += float64(en.Output)
	}
	return int(math.Round(in / n)), int(math.Round(out / n)), n / t.Span.Seconds()
}
