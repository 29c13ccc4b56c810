package otlp

import (
	"net/url"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"

	"github.com/infertop/infertop/probe"
)

// The explicit bucket boundaries the GenAI semantic conventions advise
// (semantic-conventions v1.41.0, docs/gen-ai/gen-ai-metrics.md, the
// "SHOULD be specified with ExplicitBucketBoundaries" line of each
// metric): the same powers of two from 10 ms to 81.92 s for
// gen_ai.client.operation.duration, .time_to_first_chunk and
// .time_per_output_chunk; powers of four from 1 to 4^13 tokens for
// gen_ai.client.token.usage. The SDK's default boundaries (0 to 10,000)
// would put every duration in seconds into its first few buckets.
var (
	secondsBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	tokenBuckets   = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

// operation is the gen_ai.operation.name of a request to api at path:
// chat for the conversational APIs, text_completion for the prompt-in,
// text-out ones, embeddings for the embeddings APIs.
func operation(api probe.Kind, path string) genaiconv.OperationNameAttr {
	switch {
	case api.Embeds():
		return genaiconv.OperationNameEmbeddings
	case api == probe.OpenAIChat, api == probe.OpenAIResponses, api == probe.Anthropic:
		return genaiconv.OperationNameChat
	case api == probe.Ollama && !strings.HasSuffix(path, "/api/generate"):
		return genaiconv.OperationNameChat
	}
	return genaiconv.OperationNameTextCompletion
}

// provider is the gen_ai.provider.name of api: the conventions call it the
// telemetry's flavour (which provider's attributes go with it), so a vLLM
// or SGLang server behind the OpenAI API is "openai" as the conventions
// would have it for any server of that API. The APIs the conventions do
// not list get a name of their own, as they allow.
func provider(api probe.Kind) genaiconv.ProviderNameAttr {
	switch api {
	case probe.OpenAIChat, probe.OpenAICompletions, probe.OpenAIResponses, probe.OpenAIEmbeddings:
		return genaiconv.ProviderNameOpenAI
	case probe.Anthropic:
		return genaiconv.ProviderNameAnthropic
	case probe.Ollama, probe.OllamaEmbed:
		return "ollama"
	case probe.TGI:
		return "huggingface.tgi"
	}
	return "generic"
}

// server is the server.address and server.port of endpoint (the port the
// scheme implies when it names none); ok is false when it has no host.
func server(endpoint string) (host string, port int, path string, ok bool) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Hostname() == "" {
		return "", 0, "", false
	}
	port, err = strconv.Atoi(u.Port())
	if err != nil {
		port = 80
		if u.Scheme == "https" {
			port = 443
		}
	}
	return u.Hostname(), port, u.Path, true
}

// errorType is the error.type of a failed request: the HTTP status where
// the server answered with one (the conventions' own example is "500"),
// else infertop's class of the failure (timeout, connection, stream_cut,
// ...). Both are few, as the conventions ask of the attribute.
func errorType(r probe.Result) string {
	switch r.Class {
	case probe.HTTP3xx, probe.HTTP4xx, probe.HTTP429, probe.HTTP5xx:
		if r.Status > 0 {
			return strconv.Itoa(r.Status)
		}
	}
	return r.Class.String()
}

// TargetAttribute names a comparison's side on its metrics and spans
// (Target.Name).
const TargetAttribute = "infertop.target"

// common are the attributes every metric and span of a request carries
// (model is the request's own, or the run's).
func (x *Exporter) common(model string) []attribute.KeyValue {
	kv := make([]attribute.KeyValue, 0, 7)
	if model != "" {
		kv = append(kv, semconv.GenAIRequestModel(model))
	}
	if x.host != "" {
		kv = append(kv, semconv.ServerAddress(x.host), semconv.ServerPort(x.port))
	}
	if x.name != "" {
		kv = append(kv, attribute.String(TargetAttribute, x.name))
	}
	return kv
}
