package probe

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/outputcheck"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

// replayRecording serves one recording (NAME.headers, NAME.body) as the
// server sent it, whatever the request.
func replayRecording(t *testing.T, base string) *httptest.Server {
	t.Helper()
	head, err := os.ReadFile(base + ".headers")
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(base + ".body")
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(bytes.NewReader(head))
	status, _ := r.ReadString('\n')
	code, err := strconv.Atoi(strings.Fields(status)[1])
	if err != nil {
		t.Fatalf("%s: status line %q", base, status)
	}
	h := http.Header{}
	for {
		line, err := r.ReadString('\n')
		name, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && !strings.EqualFold(name, "Content-Length") && !strings.EqualFold(name, "Transfer-Encoding") {
			h.Add(name, strings.TrimSpace(value))
		}
		if err != nil {
			break
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range h {
			w.Header()[k] = v
		}
		w.WriteHeader(code)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestOutputRecordings: the real recordings of Ollama and llama-server
// replay through the client as a person reading them judges them: JSON
// mode's {} valid and llama.cpp's never-closed string not; a schema's
// answer valid, the same schema without maxLength cut at the output limit
// and invalid; a tool call whole or in fragments (an escape split across
// two) valid, a truncated call's arguments not JSON; tools offered and no
// call made invalid; a server that cannot take tools a failed request,
// not judged. Every answer with a tool call has its TTFT.
func TestOutputRecordings(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata/structured", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	format := func(spec string) outputcheck.Spec {
		s, err := outputcheck.ParseFormat(spec, func(p string) ([]byte, error) { return read(p), nil })
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tools := func(file string, s outputcheck.Spec) *outputcheck.Spec {
		var err error
		if s.Tools, err = outputcheck.ParseTools(read(file)); err != nil {
			t.Fatal(err)
		}
		return &s
	}
	var (
		js        = format("json")
		schema    = format("json_schema:weather.schema.json")
		unbounded = format("json_schema:weather-unbounded.schema.json")
		toolsOnly = tools("tools.json", outputcheck.Spec{})
		toolsMax  = tools("tools-maxlength.json", outputcheck.Spec{})
	)
	const failed = "failed"
	for _, tc := range []struct {
		name string
		spec *outputcheck.Spec
		want string // OutputResult.String(), or failed
		call bool
	}{
		{"ollama/chat-format-json", &js, "valid", false},
		{"ollama/chat-format-schema", &schema, "valid", false},
		{"ollama/chat-format-schema-unbounded", &unbounded, outputcheck.WhyNotJSON, false},
		{"ollama/openai-chat-json-object", &js, "valid", false},
		{"ollama/openai-chat-json-schema", &schema, "valid", false},
		{"ollama/openai-chat-json-schema-unbounded-nostream", &unbounded, outputcheck.WhyNotJSON, false},
		{"ollama/openai-responses-json-schema", &schema, "valid", false},
		{"ollama/openai-responses-json-object-nostream", &js, outputcheck.WhyNotJSON, false},
		{"ollama/chat-tools", toolsOnly, outputcheck.WhyNoCall, false},
		{"ollama/openai-chat-tools", toolsOnly, outputcheck.WhyNoCall, false},
		{"ollama/chat-tools-forced", toolsOnly, "valid", true},
		{"ollama/openai-chat-tools-forced", toolsOnly, "valid", true},
		{"ollama/error-chat-tools-unsupported", toolsOnly, failed, false},
		{"ollama/error-openai-chat-tools-unsupported", toolsOnly, failed, false},
		{"llamacpp/chat-json-object", &js, outputcheck.WhyNotJSON, false},
		{"llamacpp/chat-json-schema", &schema, "valid", false},
		{"llamacpp/chat-json-schema-unbounded-nostream", &unbounded, outputcheck.WhyNotJSON, false},
		{"llamacpp/chat-tools-jinja", toolsOnly, outputcheck.WhyNoCall, false},
		{"llamacpp/chat-tools-jinja-required", toolsMax, "valid", true},
		{"llamacpp/chat-tools-jinja-required-truncated-nostream", toolsOnly, outputcheck.WhyArgsJSON, true},
		{"llamacpp/error-chat-tools-no-jinja", toolsOnly, failed, false},
	} {
		names := []string{tc.name}
		if !strings.HasSuffix(tc.name, "-nostream") {
			names = []string{tc.name + "-nostream", tc.name + "-stream"}
		}
		for _, name := range names {
			base := filepath.Join("testdata/structured", name)
			if _, err := os.Stat(base + ".body"); err != nil {
				continue // recorded one way only
			}
			t.Run(name, func(t *testing.T) {
				srv := replayRecording(t, base)
				kind, path := OpenAIChat, "/v1/chat/completions"
				switch file := filepath.Base(name); {
				case strings.HasPrefix(file, "openai-responses"):
					kind, path = OpenAIResponses, "/v1/responses"
				case strings.HasPrefix(name, "ollama/chat-") || strings.HasPrefix(name, "ollama/error-chat"):
					kind, path = Ollama, "/api/chat"
				}
				stream := strings.HasSuffix(name, "-stream")
				c, err := New(Config{URL: srv.URL + path, API: kind, Model: "tiny", NoStream: !stream, Timeout: 5 * time.Second, Body: BodyOptions{Output: tc.spec}})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				res := c.Do(context.Background(), Request{Prompt: "Weather in Paris as JSON", MaxTokens: 48})
				if tc.want == failed {
					if res.OK() || res.Output.Judged {
						t.Fatalf("a server that cannot take tools: %s %q, judged %+v", res.Class, res.Err, res.Output)
					}
					return
				}
				if !res.OK() {
					t.Fatalf("%s: %s", res.Class, res.Err)
				}
				if got := res.Output.String(); got != tc.want || res.Output.Called != tc.call {
					t.Fatalf("judged %+v, want %s (called %v)", res.Output, tc.want, tc.call)
				}
				if stream && !res.HasTTFT {
					t.Fatal("a streamed answer without a TTFT: its first output was not seen")
				}
			})
		}
	}
}

// FuzzOutputTaker: no message read by any kind's taker, streamed or
// whole, panics it or grows it past its bounds, and whatever it gathered
// is judged without a panic.
func FuzzOutputTaker(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"x","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]}}]}`,
		`{"message":{"content":"","tool_calls":[{"function":{"index":0,"name":"get_weather","arguments":{"city":"x"}}}]},"done":false}`,
		`{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","name":"f","arguments":""}}`,
		`{"type":"response.function_call_arguments.delta","output_index":1,"delta":"{}"}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","name":"f","input":{}}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`,
		`{"type":"message","content":[{"type":"tool_use","name":"f","input":{"a":[1]}}]}`,
		`{"object":"response","output":[{"type":"function_call","name":"f","arguments":"{}"}]}`,
	} {
		f.Add([]byte(s), false)
	}
	protos := []protocol{&openaiProto{chat: true, stream: true}, &ollamaProto{chat: true, stream: true}, &responsesProto{stream: true}, &anthropicProto{stream: true}}
	spec := &outputcheck.Spec{Format: outputcheck.JSON, Tools: outputcheck.Builtin()}
	f.Fuzz(func(t *testing.T, data []byte, whole bool) {
		for _, pr := range protos {
			tk := newOutputTaker()
			for range 3 { // the same message again: its fragments add up
				tk.take(pr, data, whole)
			}
			if len(tk.calls) > maxCalls || tk.args > outputcheck.MaxBytes || tk.text.Len() > outputcheck.MaxBytes+1 {
				t.Fatalf("%T: %d calls, %d bytes of arguments, %d of text", pr, len(tk.calls), tk.args, tk.text.Len())
			}
			if v := spec.Judge(tk.answer()); v.Valid != (v.Why == "") {
				t.Fatalf("%+v", v)
			}
		}
	})
}

// TestOutputBodies: each kind asks for the output in its own fields, and
// a kind with none for it is refused.
func TestOutputBodies(t *testing.T) {
	sch, err := outputcheck.ParseFormat("json_schema:testdata/structured/weather.schema.json", os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	sch.Tools = outputcheck.Builtin()
	js := &outputcheck.Spec{Format: outputcheck.JSON}
	for _, tc := range []struct {
		kind Kind
		spec *outputcheck.Spec
		want []string
	}{
		{OpenAIChat, &sch, []string{`"response_format":{"json_schema":{"name":"answer","schema":{"type":"object",`, `"tools":[{"function":{"description":"Get the current weather for a city","name":"get_weather","parameters":{"type":"object"`}},
		{OpenAIChat, js, []string{`"response_format":{"type":"json_object"}`}},
		{Ollama, &sch, []string{`"format":{"type":"object","properties"`, `"tools":[{"function":`}},
		{Ollama, js, []string{`"format":"json"`}},
		{OpenAIResponses, &sch, []string{`"text":{"format":{"name":"answer","schema":{`, `"type":"json_schema"}}`, `"tools":[{"description":"Get the current weather for a city","name":"get_weather","parameters":`}},
		{Anthropic, &outputcheck.Spec{Tools: sch.Tools}, []string{`"tools":[{"description":"Get the current weather for a city","input_schema":{"type":"object"`}},
	} {
		cfg := Config{URL: "http://127.0.0.1:1/v1", API: tc.kind, Body: BodyOptions{Output: tc.spec}}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		pr, err := newProtocol(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		body, err := pr.body("m", Request{Prompt: "p", MaxTokens: 4})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !bytes.Contains(body, []byte(w)) {
				t.Errorf("%s: no %s in %s", tc.kind, w, body)
			}
		}
	}
	for _, bad := range []Config{{API: Anthropic, Body: BodyOptions{Output: js}}, {API: OpenAICompletions, Body: BodyOptions{Output: js}}, {API: TGI, Body: BodyOptions{Output: &outputcheck.Spec{Tools: sch.Tools}}}} {
		var se *SettingError
		if err := bad.Validate(); !errors.As(err, &se) || se.Setting != SettingOutput {
			t.Errorf("%s: %v", bad.API, err)
		}
	}
}

// TestOutputOverSim: the sim answers a JSON object, a schema's document
// and a call of the first tool, streamed and whole, each judged valid;
// with every answer broken (Invalid 1) each judged invalid; and refuses a
// response format on the Responses API, which it does not write.
func TestOutputOverSim(t *testing.T) {
	sch, err := outputcheck.ParseFormat("json_schema:testdata/structured/weather.schema.json", os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	specs := map[string]*outputcheck.Spec{"json": {Format: outputcheck.JSON}, "schema": &sch, "tools": {Tools: outputcheck.Builtin()}}
	for _, invalid := range []float64{0, 1} {
		p, _ := sim.Preset("fast")
		p.Invalid = invalid
		ss := simtest.Start(t, p)
		for name, spec := range specs {
			for _, noStream := range []bool{false, true} {
				c, err := New(Config{URL: ss.ChatURL, Model: p.Model, NoStream: noStream, Timeout: 5 * time.Second, Body: BodyOptions{Output: spec}})
				if err != nil {
					t.Fatal(err)
				}
				for _, maxTokens := range []int{1, 3, 40} {
					res := c.Do(context.Background(), Request{Prompt: "weather", MaxTokens: maxTokens})
					if !res.OK() || !res.Output.Judged || res.Output.Valid != (invalid == 0) || res.Output.Called != (name == "tools") {
						t.Errorf("%s, invalid %v, not streamed %v, %d tokens: %s %q, %+v", name, invalid, noStream, maxTokens, res.Class, res.Err, res.Output)
					}
					if !noStream && (!res.HasTTFT || res.OutputTokens != maxTokens) {
						t.Errorf("%s, %d tokens: TTFT %v, %d tokens out", name, maxTokens, res.HasTTFT, res.OutputTokens)
					}
				}
				c.Close()
			}
		}
	}
	p, _ := sim.Preset("fast")
	ss := simtest.Start(t, p)
	url, _ := EndpointURL(OpenAIResponses, ss.Origin, true)
	c, err := New(Config{URL: url, API: OpenAIResponses, Model: p.Model, Timeout: 5 * time.Second, Body: BodyOptions{Output: specs["json"]}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if res := c.Do(context.Background(), Request{Prompt: "weather", MaxTokens: 4}); res.Class != HTTP4xx || !strings.Contains(res.Err, "chat/completions only") {
		t.Errorf("the Responses API's format: %s %q", res.Class, res.Err)
	}
}
