// Package sim is a simulated inference server that behaves like a
// continuous-batching engine (vLLM, SGLang, TGI): a fixed number of sequence
// slots and a KV-cache budget, a FIFO queue when either is full, prefill
// whose cost grows with prompt length, and decode steps that emit one token
// for every running sequence and slow down as the batch and its contexts
// grow. It speaks the OpenAI chat and completions APIs (streamed or not), a
// plain JSON API at /v1/infer, /v1/models, /health and Prometheus /metrics
// with vLLM's metric names. With Params.Canary it plays a rollout: a share
// of the requests served by a slower canary build on a pod of its own,
// every answer marked with the build that gave it. It serves LoRA
// adapters by name in the model's batch, each at its own pace
// (Params.Adapters), answers response_format and tools on chat with JSON
// and tool calls, Params.Invalid of them broken (structured.go), and
// charges images in a request's prompt by their size (images.go). Every request it
// serves leaves a server-side Record, the ground truth that infertop's
// client-side figures are tested against. It imports nothing else of infertop's, so that it runs alone and
// under other tools: what a caller wants done in the goroutines Serve
// starts (the dashboard's panic handler) it passes in, with WithGuard.
// Tests start it in-process with package simtest.
package sim
