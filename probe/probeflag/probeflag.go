// Package probeflag binds the client's configuration (probe.Config) to
// command-line flags (pflag): how a request is sent (the model, the
// stream, the key and the headers, TLS, the limits on time), what its
// body asks for (sampling, extra fields, a generic API's template and
// paths) and when its TTFT ends. probe itself knows nothing of flags;
// the errors here name the flag, as sim/simflag's do for the sim.
package probeflag

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/flaghelp"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/outputcheck"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/readlimit"
)

// Flags binds a probe.Config to flags; what needs reading is kept as
// text for Config.
type Flags struct {
	cfg                   probe.Config
	apiKeyEnv, apiKeyFile string
	ttft, extraBody       string
	headers               []string
	fixedOutput           bool
	serverTimings         bool
	temperature, topP     float64
	samplingSeed          int64
	fs                    *pflag.FlagSet
	// responseFormat and tools are --response-format and --tools as given.
	responseFormat, tools string
	imageSize             string
}

// Add binds the client's flags to fs.
func Add(fs *pflag.FlagSet) *Flags {
	f := &Flags{fs: fs}
	f.addSend(fs)
	f.addBody(fs)
	return f
}

// addSend: how a request is sent.
func (f *Flags) addSend(fs *pflag.FlagSet) {
	defer flaghelp.Group(fs, "Client: the model, the stream, the key, headers, TLS, time limits")()
	p := &f.cfg
	fs.StringVar(&p.Model, "model", "", "model name (default: the first model the server lists), or a mix of models or adapters under the endpoint by weight, NAME:WEIGHT,..., e.g. a:70,b:20,c:10 (seeded by --seed)")
	fs.BoolVar(&p.NoStream, "no-stream", false, "ask for whole answers (TTFT, ITL and TPOT are then not observable)")
	fs.StringVar(&f.apiKeyEnv, "api-key-env", "OPENAI_API_KEY", "environment variable holding the API key, sent as a bearer token (--api anthropic: ANTHROPIC_API_KEY, sent as x-api-key)")
	fs.StringVar(&f.apiKeyFile, "api-key-file", "", "file holding the API key (instead of --api-key-env)")
	fs.StringArrayVarP(&f.headers, "header", "H", nil, "extra request header 'Name: value' (repeatable), or @FILE with one a line (kept out of ps); values are secrets")
	fs.BoolVar(&p.Insecure, "insecure", false, "do not verify the server's TLS certificate")
	fs.StringVar(&p.CACert, "cacert", "", "PEM file of extra root certificates")
	fs.DurationVar(&p.Timeout, "timeout", probe.DefaultTimeout, "limit on one request, start to end of stream")
	fs.DurationVar(&p.ConnectTimeout, "connect-timeout", probe.DefaultConnectTimeout, "limit on connection setup")
	fs.StringVar(&f.ttft, "ttft", "first-output", "what ends TTFT: first-output (first message with text) or first-chunk (vLLM's: first message with choices)")
}

// addBody: what a request's body asks for.
func (f *Flags) addBody(fs *pflag.FlagSet) {
	defer flaghelp.Group(fs, "Request body: what each request asks for; the generic API's paths")()
	p, g := &f.cfg, &f.cfg.Generic
	fs.BoolVar(&f.fixedOutput, "fixed-output", false, "make every request produce exactly --output-tokens (ignore_eos and min_tokens, where the server takes them)")
	fs.StringVar(&p.Body.MaxTokensField, "max-tokens-field", "max_tokens", "OpenAI output-limit field: max_tokens or max_completion_tokens")
	fs.Float64Var(&f.temperature, "temperature", 0, "sampling temperature (sent only when given)")
	fs.Float64Var(&f.topP, "top-p", 0, "nucleus sampling top_p (sent only when given)")
	fs.Int64Var(&f.samplingSeed, "sampling-seed", 0, "the server's sampling seed (sent only when given)")
	fs.StringVar(&f.extraBody, "extra-body", "", "JSON object merged into every request body")
	fs.BoolVar(&f.serverTimings, "server-timings", false, "ask the server for its own timings of each request (vLLM's include_metrics: queue, TTFT, generation; sent only when given, OpenAI APIs only) and read TensorRT-LLM's /perf_metrics (joined to the requests where its answers carry its request number); llama.cpp's timings and cached prompt tokens are read whenever sent")
	fs.StringVar(&g.Template, "body-template", "", "generic: request body with {{prompt}}, {{max_tokens}} and {{model}}")
	fs.StringVar(&g.OutputPath, "output-path", "output", "generic: dot path of the answer's text, e.g. choices.0.text")
	fs.StringVar(&g.UsagePath, "usage-path", "", "generic: dot path of the object with the token counts (default: the top level)")
	fs.StringVar(&g.Stream, "stream-format", "none", "generic: none, sse or ndjson")
	fs.StringVar(&g.ChunkPath, "chunk-path", "", "generic, streamed: dot path of each chunk's text")
	fs.IntVar(&p.Body.Batch, "batch", 1, "embeddings: inputs per request (--api openai-embeddings, ollama-embed)")
	fs.StringVar(&f.responseFormat, "response-format", "", "ask for structured output and judge every answer: json (any JSON object) or json_schema:FILE (a JSON schema); chat, Responses and Ollama")
	fs.IntVar(&p.Body.Images, "images", 0, "send N synthetic PNG images in every request, as image parts (chat, Responses; a vision model)")
	fs.StringVar(&f.imageSize, "image-size", "512x512", "with --images: each image's WxH in pixels")
	fs.StringVar(&f.tools, "tools", "", "offer tools and judge every answer's call: FILE of OpenAI-style tool definitions, or builtin (get_weather, search); chat, Responses, Ollama and Anthropic")
}

// Config reads the flags into a probe.Config for an API of kind kind
// (the key's default variable is the API's): the TTFT's end, the
// headers, the key (from the environment through getenv, or a file;
// never from a flag's value), the sampling fields given.
func (f *Flags) Config(kind probe.Kind, getenv func(string) string) (probe.Config, error) {
	p := f.cfg
	mix, err := f.Mix()
	if err != nil {
		return p, err
	}
	if len(mix) > 0 { // the client's own model is the mix's first; each request names its own
		p.Model = mix[0].Name
	}
	if p.TTFT, err = probe.ParseTTFTMode(f.ttft); err != nil {
		return p, fmt.Errorf("--ttft: %w", err)
	}
	switch p.Header, err = probe.ParseHeaders(f.headers); {
	case errors.Is(err, probe.ErrBadHeader):
		return p, fmt.Errorf("bad --header: %w", err)
	case err != nil:
		return p, fmt.Errorf("--header %w", err)
	}
	env := f.apiKeyEnv
	if kind == probe.Anthropic && !f.fs.Changed("api-key-env") {
		env = "ANTHROPIC_API_KEY"
	}
	p.APIKey = getenv(env)
	if f.apiKeyFile != "" {
		k, err := readlimit.File(f.apiKeyFile, readlimit.Secret)
		if err != nil {
			return p, fmt.Errorf("--api-key-file: %w", err)
		}
		p.APIKey = strings.TrimSpace(string(k))
	}
	b := &p.Body
	b.IgnoreEOS, b.MinTokens = f.fixedOutput, f.fixedOutput
	if f.fs.Changed("temperature") {
		b.Temperature = &f.temperature
	}
	if f.fs.Changed("top-p") {
		b.TopP = &f.topP
	}
	if f.fs.Changed("sampling-seed") {
		b.Seed = &f.samplingSeed
	}
	if f.extraBody != "" {
		if err := json.Unmarshal([]byte(f.extraBody), &b.Extra); err != nil {
			return p, fmt.Errorf("--extra-body must be a JSON object: %w", err)
		}
	}
	if p.Body.Output, err = f.output(); err != nil {
		return p, err
	}
	if p.Body.ImageW, p.Body.ImageH, err = probe.ParseImageSize(f.imageSize); err != nil {
		return p, fmt.Errorf("--image-size: %w", err)
	}
	p.ServerTimings = f.serverTimings // asked once the API is known (probe.New)
	p.MaxConns = load.MaxConcurrency
	return p, nil
}

// output reads --response-format and --tools (nil when neither is given);
// their files are read with a bound.
func (f *Flags) output() (*outputcheck.Spec, error) {
	if f.responseFormat == "" && f.tools == "" {
		return nil, nil
	}
	read := func(path string) ([]byte, error) { return readlimit.File(path, readlimit.Schema) }
	s, err := outputcheck.ParseFormat(f.responseFormat, read)
	if err != nil {
		return nil, fmt.Errorf("--response-format: %w", err)
	}
	switch f.tools {
	case "":
	case "builtin":
		s.Tools = outputcheck.Builtin()
	default:
		doc, err := read(f.tools)
		if err != nil {
			return nil, fmt.Errorf("--tools: %w", err)
		}
		if s.Tools, err = outputcheck.ParseTools(doc); err != nil {
			return nil, fmt.Errorf("--tools %s: %w", f.tools, err)
		}
	}
	return &s, nil
}

// Mix is the --model flag's mix of models (nil when it names one model).
func (f *Flags) Mix() (load.Mix, error) {
	m, err := load.ParseMix(f.cfg.Model)
	if err != nil {
		return nil, fmt.Errorf("--model: %w", err)
	}
	return m, nil
}

// Setting is the value of one of these flags as the reports store it,
// and whether it needs more than its text: a body may carry a key
// ({"api_key": ...}), and of the headers only their names are kept.
func (f *Flags) Setting(fl *pflag.Flag) (string, bool) {
	switch fl.Name {
	case "extra-body", "body-template":
		return probe.Redact(fl.Value.String(), 0), true
	case "header":
		var names []string
		for _, h := range f.headers {
			if strings.HasPrefix(h, "@") {
				names = append(names, h) // a file's name
				continue
			}
			name, _, _ := strings.Cut(h, ":")
			names = append(names, strings.TrimSpace(name)+": <redacted>")
		}
		return strings.Join(names, "; "), true
	}
	return "", false
}

// flagOf names the flag behind each setting a probe.SettingError names.
// The endpoint's URL and its API are bound beside the runner's settings
// (--url, --api), which name them.
var flagOf = map[string]string{
	probe.SettingTTFT: "--ttft", probe.SettingTimeout: "--timeout", probe.SettingConnectTimeout: "--connect-timeout",
	probe.SettingCACert: "--cacert", probe.SettingMaxTokensField: "--max-tokens-field",
	probe.SettingStreamFormat: "--stream-format", probe.SettingChunkPath: "--chunk-path",
	probe.SettingTemplate: "--body-template", probe.SettingBatch: "--batch", probe.SettingOutput: "--response-format/--tools", probe.SettingImages: "--images",
}

// FlagError says in the command line's words what probe refused: the
// flag's name, then what is wrong with its value, on one line. An error
// that names no setting of these flags is returned as it is.
func FlagError(err error) error {
	var pe *probe.SettingError
	if errors.As(err, &pe) {
		if name := flagOf[pe.Setting]; name != "" {
			return fmt.Errorf("%s: %w", name, pe.Err)
		}
	}
	return err
}
