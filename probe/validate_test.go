package probe

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestValidate: what no request could be sent with is refused, naming
// the setting in the client's terms (never a command-line flag), and New
// refuses it too instead of replacing it with a default.
func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		setting string
		msg     string
	}{
		{"unknown API", Config{API: "grpc"}, SettingAPI, `unknown API "grpc" (want openai-chat`},
		{"unknown TTFT mode", Config{TTFT: 9}, SettingTTFT, "9 is neither"},
		{"negative timeout", Config{Timeout: -time.Second}, SettingTimeout, "-1s is negative"},
		{"negative connect timeout", Config{ConnectTimeout: -time.Second}, SettingConnectTimeout, "-1s is negative"},
		{"negative drain wait", Config{DrainWait: -time.Second}, SettingDrainWait, "-1s is negative"},
		{"negative pool", Config{MaxConns: -1}, SettingMaxConns, "-1 connections is negative"},
		{"odd output-limit field", Config{Body: BodyOptions{MaxTokensField: "n"}}, SettingMaxTokensField, `"n" is neither max_tokens nor max_completion_tokens`},
		{"odd stream", Config{API: Generic, Generic: GenericOptions{Stream: "xml"}}, SettingStreamFormat, `"xml" is not none, sse or ndjson`},
		{"stream, no chunk path", Config{API: Generic, Generic: GenericOptions{Stream: "sse"}}, SettingChunkPath, "sse streaming needs one"},
		{"template no JSON", Config{API: Generic, Generic: GenericOptions{Template: `{"p": {{prompt}}`}}, SettingTemplate, "not JSON once filled in"},
		{"extra fields, list template", Config{API: Generic, Generic: GenericOptions{Template: `["{{prompt}}"]`}, Body: BodyOptions{Extra: map[string]any{"x": 1}}}, SettingTemplate, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cfg
			c.URL = "http://127.0.0.1:1/v1/chat/completions"
			_, newErr := New(c)
			for _, err := range []error{tt.cfg.Validate(), newErr} {
				var se *SettingError
				if !errors.As(err, &se) || se.Setting != tt.setting || !strings.Contains(se.Err.Error(), tt.msg) {
					t.Fatalf("got %v, want a %s error saying %q", err, tt.setting, tt.msg)
				}
				if strings.Contains(err.Error(), "--") {
					t.Fatalf("%q names a flag", err)
				}
			}
		})
	}
	ok := Config{API: Generic, Generic: GenericOptions{Template: `{"in": "{{prompt}}", "n": {{max_tokens}}}`, Stream: "ndjson", ChunkPath: "t"}, Body: BodyOptions{Extra: map[string]any{"x": 1}}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a good generic configuration: %v", err)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("the zero configuration: %v", err)
	}
}

// TestCheckURL: an endpoint that is no http(s) URL is refused, shown
// without its credentials.
func TestCheckURL(t *testing.T) {
	for _, raw := range []string{"foo", "ftp://host/v1", "http://", "http://user:hunter22@%zz/v1", "localhost:8000"} {
		err := CheckURL(raw)
		var se *SettingError
		if !errors.As(err, &se) || se.Setting != SettingURL {
			t.Errorf("%q: %v, want a %s error", raw, err, SettingURL)
			continue
		}
		if strings.Contains(err.Error(), "hunter22") || strings.Contains(err.Error(), "--") {
			t.Errorf("%q: %v", raw, err)
		}
		if _, err := New(Config{URL: raw}); !errors.As(err, &se) || se.Setting != SettingURL {
			t.Errorf("New(%q): %v", raw, err)
		}
	}
	if err := CheckURL("https://host:8000/v1"); err != nil {
		t.Error(err)
	}
}
