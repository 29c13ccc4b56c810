package runner

import (
	"errors"
	"fmt"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// MinScrapeEvery is the shortest scrape interval: a scrape reads the
// server's whole /metrics page, and one faster than this would time the
// scrapes rather than the server (and put a load of its own on it).
const MinScrapeEvery = 100 * time.Millisecond

// Validate reports the first setting of c that cannot be right, before
// anything is started. The runner's own settings are a *SettingError; the
// endpoint URL and the client's settings are the probe's
// (*probe.SettingError), the engine's the load's (*load.SettingError,
// wrapped), the embedded sim's the sim's (*sim.ParamError, wrapped), each
// in its own terms. Start calls it first.
func (c Config) Validate() error {
	if c.URL != "" {
		if err := probe.CheckURL(c.URL); err != nil {
			return err
		}
	} else {
		switch c.API {
		case probe.Ollama, probe.TGI:
			return &SettingError{SettingAPI, fmt.Errorf("the embedded sim speaks openai-chat, openai-completions, openai-responses, anthropic, generic, openai-embeddings and ollama-embed, not %s", c.API)}
		}
		if err := c.Sim.Validate(); err != nil {
			return fmt.Errorf("embedded sim: %w", err)
		}
	}
	pc := c.Probe
	if c.API != "" { // Start sets it so; detected, it is checked when the client is made
		pc.API = c.API
	}
	if err := pc.Validate(); err != nil {
		return err
	}
	if err := c.loadConfig().Validate(); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	t := c.Telemetry
	switch {
	case t.Every < 0 || t.Every > 0 && t.Every < MinScrapeEvery:
		return &SettingError{SettingScrapeEvery, fmt.Errorf("%v is under the least, %v", t.Every, MinScrapeEvery)}
	case t.GPULocal && t.GPUMetrics != "":
		return &SettingError{SettingGPUs, errors.New("read this machine's GPUs or a DCGM exporter's, not both")}
	case c.InfoTimeout < 0:
		return &SettingError{SettingInfoTimeout, fmt.Errorf("%v is negative", c.InfoTimeout)}
	}
	if err := c.OTLP.Validate(); err != nil {
		return &SettingError{SettingOTLP, err}
	}
	return c.measurable()
}

// ErrNotStreamed and ErrNoGPU are the objectives a configuration cannot
// measure: one that could never be judged must not wait for the end of a
// run to say so.
var (
	ErrNotStreamed = errors.New("the answers are not streamed: there are no stream messages to time")
	// ErrEmbeddings: an embeddings API answers whole, with no tokens to
	// time; E2E, requests, inputs and input tokens are what it has.
	ErrEmbeddings = errors.New("an embeddings API streams nothing: only E2E, requests, inputs and input tokens are measured")
	ErrNoGPU      = errors.New("no GPU is read")
	// ErrNotJudged: invalid_rate reads the judged answers, and only a
	// load that asks for structured output or tools has any.
	ErrNotJudged = errors.New("no answer is judged")
)

// UnmeasurableError is an objective (Expr) the configuration cannot
// measure, and why: ErrNotStreamed or ErrNoGPU.
type UnmeasurableError struct {
	Expr string
	Why  error
}

func (e *UnmeasurableError) Error() string { return e.Expr + ": " + e.Why.Error() }
func (e *UnmeasurableError) Unwrap() error { return e.Why }

// measurable refuses an objective the configuration cannot measure.
func (c Config) measurable() error {
	gpus := c.Telemetry.GPULocal || c.Telemetry.GPUMetrics != "" || c.URL == "" && c.Sim.GPUs > 0
	for _, o := range c.Objectives {
		switch {
		case o.NeedsStream() && c.Probe.NoStream:
			return &UnmeasurableError{o.Expr, ErrNotStreamed}
		case o.NeedsStream() && c.API.Embeds():
			return &UnmeasurableError{o.Expr, ErrEmbeddings}
		case o.NeedsEnergy() && !gpus:
			return &UnmeasurableError{o.Expr, ErrNoGPU}
		case o.Metric == "invalid_rate" && c.Probe.Body.Output.IsZero():
			return &UnmeasurableError{o.Expr, ErrNotJudged}
		}
	}
	return nil
}

// loadConfig is the engine's configuration as Start gives it: with the
// embedded sim serving from this process, each request in flight holds
// two of its descriptors (the client's end and the sim's).
func (c Config) loadConfig() load.Config {
	lc := c.Load
	if c.URL == "" && lc.FilesPerRequest == 0 {
		lc.FilesPerRequest = 2
	}
	return lc
}
