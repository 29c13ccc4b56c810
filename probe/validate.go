package probe

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// SettingError is a setting of Config (or an endpoint URL) the client
// cannot use. Setting names it in the client's own terms (one of the
// Setting* constants), so that a command line can name its flag instead;
// Err says what is wrong, in words that read after either name.
type SettingError struct {
	Setting string
	Err     error
}

func (e *SettingError) Error() string { return e.Setting + ": " + e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

// The settings a SettingError names.
const (
	SettingURL            = "endpoint URL"          // the endpoint given (CheckURL, EndpointURL, Detect)
	SettingAPI            = "API"                   // Config.API
	SettingTTFT           = "TTFT mode"             // Config.TTFT
	SettingTimeout        = "request timeout"       // Config.Timeout
	SettingConnectTimeout = "connect timeout"       // Config.ConnectTimeout
	SettingDrainWait      = "drain wait"            // Config.DrainWait
	SettingMaxConns       = "connection pool"       // Config.MaxConns
	SettingCACert         = "CA certificates"       // Config.CACert
	SettingMaxTokensField = "output-limit field"    // Config.Body.MaxTokensField
	SettingStreamFormat   = "generic stream format" // Config.Generic.Stream
	SettingChunkPath      = "generic chunk path"    // Config.Generic.ChunkPath
	SettingTemplate       = "body template"         // Config.Generic.Template
	SettingBatch          = "embeddings batch"      // Config.Body.Batch
)

// MaxBatch is the most inputs one embeddings request may send.
const MaxBatch = 4096

// ErrUndetected is Detect's error when no probe told which API the
// server speaks: the API has to be given.
var ErrUndetected = errors.New("cannot tell which API the server speaks")

// Validate reports the first setting of c the client cannot use, as a
// *SettingError. Zero keeps meaning the default (DefaultTimeout,
// DefaultConnectTimeout, DefaultDrainWait, max_tokens, openai-chat, ...);
// a negative time or a value the protocols do not know is refused rather
// than replaced. The URL is New's to check: a caller may validate before
// it has one.
func (c Config) Validate() error {
	switch {
	case c.API != "" && !slices.Contains(Kinds(), c.API):
		return &SettingError{SettingAPI, unknownKind(string(c.API))}
	case c.TTFT != TTFTFirstOutput && c.TTFT != TTFTFirstChunk:
		return &SettingError{SettingTTFT, fmt.Errorf("%d is neither first-output nor first-chunk", c.TTFT)}
	case c.Timeout < 0:
		return &SettingError{SettingTimeout, fmt.Errorf("%v is negative", c.Timeout)}
	case c.ConnectTimeout < 0:
		return &SettingError{SettingConnectTimeout, fmt.Errorf("%v is negative", c.ConnectTimeout)}
	case c.DrainWait < 0:
		return &SettingError{SettingDrainWait, fmt.Errorf("%v is negative", c.DrainWait)}
	case c.MaxConns < 0:
		return &SettingError{SettingMaxConns, fmt.Errorf("%d connections is negative", c.MaxConns)}
	}
	switch c.Body.MaxTokensField {
	case "", "max_tokens", "max_completion_tokens":
	default:
		return &SettingError{SettingMaxTokensField, fmt.Errorf("%q is neither max_tokens nor max_completion_tokens", c.Body.MaxTokensField)}
	}
	if c.Body.Batch < 0 || c.Body.Batch > MaxBatch {
		return &SettingError{SettingBatch, fmt.Errorf("%d inputs is outside 1..%d", c.Body.Batch, MaxBatch)}
	}
	if err := c.checkOutput(); err != nil {
		return err
	}
	if err := c.checkImages(); err != nil {
		return err
	}
	if c.API == Generic {
		return c.Generic.check(len(c.Body.Extra) > 0)
	}
	return nil
}

// check reports generic options no answer could be read with, and a
// template no request could be built from: found here, not in every
// request's error.
func (g GenericOptions) check(extra bool) error {
	stream := g.Stream
	if stream == "" {
		stream = "none"
	}
	switch {
	case stream != "none" && stream != "sse" && stream != "ndjson":
		return &SettingError{SettingStreamFormat, fmt.Errorf("%q is not none, sse or ndjson", g.Stream)}
	case stream != "none" && g.ChunkPath == "":
		return &SettingError{SettingChunkPath, fmt.Errorf("%s streaming needs one, to find each chunk's text", stream)}
	}
	if g.Template == "" {
		return nil
	}
	filled := strings.NewReplacer("{{prompt}}", "p", "{{max_tokens}}", "1", "{{model}}", "m").Replace(g.Template)
	if !json.Valid([]byte(filled)) {
		return &SettingError{SettingTemplate, fmt.Errorf("not JSON once filled in: %s", Redact(filled, 200))}
	}
	var m map[string]any
	if extra && json.Unmarshal([]byte(filled), &m) != nil {
		return &SettingError{SettingTemplate, errors.New("not a JSON object once filled in, and extra body fields need one to merge into")}
	}
	return nil
}

// CheckURL reports whether raw can be an endpoint: http or https, with a
// host. Its error is a *SettingError (SettingURL) that shows the URL
// without its credentials.
func CheckURL(raw string) error {
	_, err := parseBase(raw)
	return err
}

// schemeHint is a hint for a URL typed without its scheme
// (127.0.0.1:8000, localhost:8000/v1): the URL with http:// before it.
func schemeHint(raw string) string {
	if strings.Contains(raw, "://") || !strings.ContainsAny(raw, ":./") || strings.ContainsAny(raw, " \t") {
		return "" // a bare word is no host a person meant
	}
	if _, err := url.Parse("http://" + raw); err != nil {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", RedactURL("http://"+raw))
}

// parseBase parses an endpoint as a user gave it.
func parseBase(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, &SettingError{SettingURL, fmt.Errorf("%q is no URL, want http(s)://host[:port][/path]%s", RedactURL(raw), schemeHint(raw))}
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, &SettingError{SettingURL, fmt.Errorf("%q is not http(s)://host[:port][/path]%s", RedactURL(raw), schemeHint(raw))}
	}
	return u, nil
}

// unknownKind says which kinds there are.
func unknownKind(s string) error {
	names := make([]string, 0, len(Kinds()))
	for _, k := range Kinds() {
		names = append(names, string(k))
	}
	return fmt.Errorf("unknown API %q (want %s)", s, strings.Join(names, ", "))
}
