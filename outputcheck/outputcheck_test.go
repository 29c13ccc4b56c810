package outputcheck

import (
	"os"
	"strings"
	"testing"
)

func weather(t testing.TB) Spec {
	t.Helper()
	s, err := ParseFormat("json_schema:testdata/weather.schema.json", os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseFormat(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want Format
		bad  string
	}{
		{spec: "", want: Text}, {spec: "text", want: Text}, {spec: "json", want: JSON},
		{spec: "json_schema:testdata/weather.schema.json", want: Schema},
		{spec: "json:x", bad: "takes no file"}, {spec: "json_schema", bad: "want json_schema:FILE"},
		{spec: "json_schema:testdata/none.json", bad: "schema"}, {spec: "xml", bad: "want json or json_schema:FILE"},
		{spec: "json_schema:outputcheck_test.go", bad: "not JSON"},
	} {
		s, err := ParseFormat(tc.spec, os.ReadFile)
		if tc.bad != "" {
			if err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%q: %v, want %q", tc.spec, err, tc.bad)
			}
			continue
		}
		if err != nil || s.Format != tc.want {
			t.Errorf("%q: %v %v", tc.spec, s.Format, err)
		}
	}
	if s := weather(t); strings.ContainsAny(string(s.SchemaDoc), "\n") || s.IsZero() {
		t.Errorf("schema %s", s.SchemaDoc)
	}
}

func TestParseTools(t *testing.T) {
	b := Builtin()
	if len(b) != 2 || b[0].Name != "get_weather" || b[1].Name != "search" {
		t.Fatalf("%+v", b)
	}
	bare, err := ParseTools([]byte(`[{"name":"f","parameters":{"type":"object"}},{"type":"function","function":{"name":"g"}}]`))
	if err != nil || len(bare) != 2 || bare[1].Name != "g" || string(bare[1].Parameters) != `{"type":"object"}` {
		t.Fatalf("%+v %v", bare, err)
	}
	for _, bad := range []string{`{}`, `[]`, `[{"type":"function","function":{}}]`, `[{"name":"f"},{"name":"f"}]`, `[{"name":"f","parameters":{"type":7}}]`} {
		if _, err := ParseTools([]byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "tools:") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestJudge(t *testing.T) {
	js, sch := &Spec{Format: JSON}, weather(t)
	tools := &Spec{Tools: Builtin()}
	both := weather(t)
	both.Tools = Builtin()
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	for _, tc := range []struct {
		name string
		s    *Spec
		a    Answer
		want Verdict
	}{
		{"text asks nothing", &Spec{}, Answer{Text: "hello"}, Verdict{Valid: true}},
		{"json object", js, Answer{Text: " {}\n"}, Verdict{Valid: true}},
		{"json array is no object", js, Answer{Text: "[1]"}, Verdict{Why: WhyNotJSON}},
		{"json cut", js, Answer{Text: `{"city":"Par`}, Verdict{Why: WhyNotJSON}},
		{"json trailing", js, Answer{Text: `{} {}`}, Verdict{Why: WhyNotJSON}},
		{"too deep", js, Answer{Text: deep}, Verdict{Why: WhyNotJSON}},
		{"too large", js, Answer{Text: `{"a":"` + strings.Repeat("x", MaxBytes) + `"}`}, Verdict{Why: WhyNotJSON}},
		{"schema held, whitespace around", &sch, Answer{Text: "{\"city\" :\"],atumau\", \"temp\":-2120\n\t   } "}, Verdict{Valid: true}},
		{"schema missed", &sch, Answer{Text: `{"city":"Paris"}`}, Verdict{Why: WhySchema}},
		{"schema too long a city", &sch, Answer{Text: `{"city":"Paris, France","temp":1}`}, Verdict{Why: WhySchema}},
		{"call", tools, Answer{Calls: []ToolCall{{"get_weather", `{"city":"Paris"}`}}}, Verdict{Valid: true, Called: true, ArgsValid: true}},
		{"no call", tools, Answer{Text: "it is sunny"}, Verdict{Why: WhyNoCall}},
		{"unknown tool", tools, Answer{Calls: []ToolCall{{"rm", `{}`}}}, Verdict{Called: true, Why: WhyUnknown}},
		{"args cut", tools, Answer{Calls: []ToolCall{{"get_weather", `{"city":"Par`}}}, Verdict{Called: true, Why: WhyArgsJSON}},
		{"args miss", tools, Answer{Calls: []ToolCall{{"get_weather", `{"unit":"kelvin"}`}}}, Verdict{Called: true, Why: WhyArgsSchema}},
		{"one bad of two", tools, Answer{Calls: []ToolCall{{"search", `{"query":"x"}`}, {"search", `{}`}}}, Verdict{Called: true, Why: WhyArgsSchema}},
		{"an answer instead of a call", &both, Answer{Text: `{"city":"Paris","temp":20}`}, Verdict{Valid: true}},
		{"cut by the client", js, Answer{Text: "{}", Cut: true}, Verdict{Why: WhyCut}},
	} {
		if got := tc.s.Judge(tc.a); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// FuzzJudge: no answer panics the judge or passes the bounds, and a valid
// verdict always names no reason.
func FuzzJudge(f *testing.F) {
	for _, s := range []string{`{}`, `{"city":"x","temp":1}`, `[[[`, `"\"`, `{"a":[1,2,{"b":null}]}`, "\xff"} {
		f.Add(s, s)
	}
	sch := weather(f)
	sch.Tools = Builtin()
	f.Fuzz(func(t *testing.T, text, args string) {
		for _, a := range []Answer{{Text: text}, {Calls: []ToolCall{{"get_weather", args}}}} {
			v := sch.Judge(a)
			if v.Valid != (v.Why == "") {
				t.Fatalf("%+v", v)
			}
		}
		if withinDepth(text, MaxDepth) && len(text) <= MaxBytes {
			(&Spec{Format: JSON}).Judge(Answer{Text: text})
		}
	})
}
