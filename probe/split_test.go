package probe

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

func TestParseSplitBy(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want SplitBy
		bad  bool
	}{
		{spec: "header:x-backend", want: SplitBy{Header: "X-Backend"}},
		{spec: " HEADER: X-Served-By ", want: SplitBy{Header: "X-Served-By"}},
		{spec: "field:system_fingerprint", want: SplitBy{Field: "system_fingerprint"}},
		{spec: "field:model", want: SplitBy{Field: "model"}},
		{spec: " model ", want: SplitBy{Model: true}},
		{spec: "models", bad: true},
		{spec: "field:id", bad: true},
		{spec: "header:", bad: true},
		{spec: "header:a b", bad: true},
		{spec: "x-backend", bad: true},
		{spec: "query:x", bad: true},
		{spec: "", bad: true},
	} {
		got, err := ParseSplitBy(tc.spec)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: no error, got %+v", tc.spec, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v %v, want %+v", tc.spec, got, err, tc.want)
		}
		if back, err := ParseSplitBy(got.String()); err != nil || back != got {
			t.Errorf("%q: String %q reads back as %+v %v", tc.spec, got.String(), back, err)
		}
	}
	if !(SplitBy{}).IsZero() || (SplitBy{Field: "model"}).IsZero() || (SplitBy{Model: true}).IsZero() {
		t.Error("IsZero")
	}
}

// TestSplitCaptured: the group is read from the header (on an error too)
// and from the first message that carries the field, streamed or not, cut
// to MaxGroupBytes.
func TestSplitCaptured(t *testing.T) {
	long := strings.Repeat("é", MaxGroupBytes) // two bytes a character
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Backend", r.URL.Query().Get("b"))
		if r.URL.Query().Get("fail") != "" {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		if r.URL.Query().Get("whole") != "" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"x","model":"m-whole","choices":[{"message":{"content":"hi"}}],"system_fingerprint":"fp_wh\u006fle"}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if r.URL.Query().Get("late") != "" {
			// Only the message that ends the answer carries it, past the
			// first few messages looked at.
			for range 8 {
				fmt.Fprint(w, `data: {"id":"x","choices":[{"delta":{"content":"a"}}]}`+"\n\n")
			}
			fmt.Fprint(w, `data: {"id":"x","choices":[{"delta":{},"finish_reason":"stop"}],"system_fingerprint":"fp_last"}`+"\n\n")
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
		// The role chunk has no fingerprint, the first content chunk does,
		// a later one another (ignored: the first one counts).
		fmt.Fprint(w, `data: {"id":"x","model":"m1","choices":[{"delta":{"role":"assistant"}}]}`+"\n\n")
		fmt.Fprint(w, `data: {"id":"x","model":"m1","system_fingerprint":null,"choices":[{"delta":{"content":"a"}}]}`+"\n\n")
		fmt.Fprintf(w, `data: {"id":"x","model":"m1","choices":[{"delta":{"content":"b"}}],"system_fingerprint":%q}`+"\n\n", r.URL.Query().Get("fp"))
		fmt.Fprint(w, `data: {"id":"x","model":"m2","choices":[{"delta":{"content":"c"}}],"system_fingerprint":"fp_later"}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	do := func(by SplitBy, query string) Result {
		t.Helper()
		c, err := New(Config{URL: srv.URL + "/v1/chat/completions?" + query, Model: "m", Timeout: 5 * time.Second, SplitBy: by})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.Do(context.Background(), Request{Prompt: "p", MaxTokens: 8, Model: modelOf(query)})
	}
	for _, tc := range []struct {
		by     SplitBy
		query  string
		want   string
		wantOK bool
	}{
		{SplitBy{Header: "X-Backend"}, "b=pod-a", "pod-a", true},
		// A backend really named as the overflow group stays apart from it.
		{SplitBy{Header: "X-Backend"}, "b=other", `"other"`, true},
		{SplitBy{Header: "X-Backend"}, "b=%22other%22", `""other""`, true},
		{SplitBy{Header: "X-Backend"}, "b=others", "others", true},
		{SplitBy{Header: "X-Backend"}, "b=pod-b&fail=1", "pod-b", false},
		{SplitBy{Header: "X-Other"}, "b=pod-a", "", true},
		{SplitBy{Field: "system_fingerprint"}, "fp=fp_abc", "fp_abc", true},
		{SplitBy{Field: "model"}, "fp=fp_abc", "m1", true},
		{SplitBy{Field: "system_fingerprint"}, "fp=" + long, long[:MaxGroupBytes], true},
		{SplitBy{Field: "system_fingerprint"}, "whole=1", "fp_whole", true},
		{SplitBy{Field: "system_fingerprint"}, "late=1", "fp_last", true},
		{SplitBy{Field: "model"}, "whole=1", "m-whole", true},
		{SplitBy{}, "b=pod-a&fp=fp_abc", "", true},
		// By the model each request asked for, the client's or its own,
		// whatever the server says; a failure is its model's too.
		{SplitBy{Model: true}, "fp=fp_abc", "m", true},
		{SplitBy{Model: true}, "fp=fp_abc&model=lora-a", "lora-a", true},
		{SplitBy{Model: true}, "b=pod-b&fail=1&model=lora-b", "lora-b", false},
	} {
		r := do(tc.by, tc.query)
		if r.Group != tc.want || r.OK() != tc.wantOK {
			t.Errorf("%+v %s: group %q ok %v (%s), want %q %v", tc.by, tc.query, r.Group, r.OK(), r.Err, tc.want, tc.wantOK)
		}
		if r.Model != modelOf(tc.query) {
			t.Errorf("%s: the request's model recorded as %q", tc.query, r.Model)
		}
		if !utf8.ValidString(r.Group) || len(r.Group) > MaxGroupBytes {
			t.Errorf("%+v %s: group %q: invalid or too long", tc.by, tc.query, r.Group)
		}
	}
	// A header longer than the cap is cut too.
	if got := groupValue(strings.Repeat("x", 1000)); len(got) != MaxGroupBytes {
		t.Errorf("groupValue kept %d bytes", len(got))
	}
}

// modelOf is a test query's model= value: the request's own model.
func modelOf(query string) string {
	v, _ := url.ParseQuery(query)
	return v.Get("model")
}

// FuzzTopString: wherever topString finds a field, the full parser reads
// the same string there (the first of the name, as fastjson's Get does).
func FuzzTopString(f *testing.F) {
	for _, s := range []string{
		`{"id":"x","model":"m","system_fingerprint":"fp_1","choices":[]}`,
		`{"model":"a\"b\u00e9","choices":[{"delta":{"model":"no"}}]}`,
		`{"choices":[{"model":"inner"}],"model":null}`,
		`{"model":1}`, `{"model":"a","model":"b"}`, `[{"model":"a"}]`, `{"mod\u0065l":"esc"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, key := range SplitFields() {
			got, ok := topString(data, key)
			if !ok {
				continue
			}
			var p fastjson.Parser
			v, err := p.ParseBytes(data)
			if err != nil {
				// topString stops at the member: what follows it may be
				// broken, and the stream's parser then rejects the message.
				continue
			}
			want := v.Get(key)
			if want == nil || want.Type() != fastjson.TypeString || string(want.GetStringBytes()) != got {
				t.Fatalf("%q in %q: topString %q, fastjson %v", key, data, got, want)
			}
		}
	})
}

// BenchmarkReadStreamSplit is BenchmarkReadStream's infertop case with a
// field to group by: "found" when the first message carries it, "absent"
// when no message does (the worst case: every message is scanned for it).
func BenchmarkReadStreamSplit(b *testing.B) {
	for _, tc := range []struct{ name, field string }{{"found", "model"}, {"absent", "system_fingerprint"}} {
		b.Run(tc.name, func(b *testing.B) {
			payload := benchStream(b)
			c, _ := New(Config{URL: "http://127.0.0.1:1/v1/chat/completions", SplitBy: SplitBy{Field: tc.field}})
			live := &Live{Origin: time.Now()}
			live.Reserve(256)
			b.ReportAllocs()
			for b.Loop() {
				res := Result{Start: time.Now()}
				live.Begin(res.Start)
				c.readStream(context.Background(), strings.NewReader(payload), frameSSE, &res, Request{MaxTokens: 200, Live: live})
				if !res.OK() || res.Messages != 200 || (tc.name == "found") != (res.Group != "") {
					b.Fatalf("%d messages, group %q, %v", res.Messages, res.Group, res.Err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*200), "ns/msg")
		})
	}
}
