# The test suite: everything with the race detector, two packages at a
# time (go test's default on two cores), the builds of some beside the
# tests of others: the tests wait for events, not for time, so a build
# beside them moves nothing but the clock (a first pass that only built
# cost more than it saved: BENCHMARKS.md has the figures). go test runs
# vet's high-confidence checks itself; the full vet is in lint (a
# separate vet compiles every dependency again without -race). The timing
# tests that need a build without the race detector (the
# client-versus-server accuracy test, the bench's memory test, compare's
# 100-run properties) are test-accuracy's, a stage of their own that
# .ci/run runs beside test-compare, which shares its build. CONTRIBUTING.md
# describes every stage; BENCHMARKS.md keeps their timings, dated.
.PHONY: test-watch test-compare-aa test test-accuracy test-endurance test-compare test-manifests test-agents test-guides test-trace test-slow test-sdk build image bench lint

# VERSION is what infertop --version says of a make build: the checkout's
# tag, commits since and revision (git describe); "dev" outside git.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

# The race runtime sleeps a second before every binary built with it exits
# (GORACE's atexit_sleep_ms, for goroutines still running to report a race
# in): over 30 test binaries, 30 s of sleep. The packages whose goroutines outlive a test check
# in TestMain that none is left at the end (goleak), so it waits for
# nothing there.
export GORACE := $(GORACE) atexit_sleep_ms=0

test:
	go test -race -count=1 ./...

# The client-versus-server accuracy test again without the race detector,
# against its 2 ms / 5 % bounds (the detector's slowdown of both HTTP
# stacks is larger), and the bench's memory test (the detector's shadow
# memory would be most of the resident memory it judges), one after the
# other so that neither disturbs the other; then compare's 100-run
# properties, pure arithmetic, too slow under the detector. .ci/run runs
# it after make test.
test-accuracy:
	go test -count=1 -p 1 -run 'TestEngineMatchesSim|TestMemoryFlat' ./load ./tools/bench
	go test -count=1 -run 'FalsePositives' ./compare

# The Kubernetes manifests decoded strictly with k8s.io/api's own types,
# in a stage of their own (.ci/run runs it after make test): those types
# take about a minute to build under -race, for a test that races nothing.
# Beside them the image they run (tools/image): built as make image
# builds it and read back, a build of infertop for linux.
test-manifests:
	go test -count=1 -tags manifests ./deploy/kubernetes ./deploy/rollouts ./tools/image

# Agents as processes of their own (this test binary as infertop agent,
# each on 127.0.0.1 at its own port) against one sim, followed by run
# --agents: four merged exactly, and one killed mid-run (.ci/run runs it
# after make test). Most of its time is the processes' start and their
# --start-at.
test-agents:
	INFERTOP_AGENTS=1 go test -race -count=1 -v -run 'TestFourAgents|TestAgentLost|TestAgentsSplit|TestAgentsFindMax|TestAgentsMatrix|TestAgentsCompare' .

# The endurance test in a stage of its own (.ci/run runs it after make
# test): 35 s of the real dashboard in tmux against every fault.
test-endurance:
	INFERTOP_ENDURANCE=1 go test -race -count=1 -run 'TestEndurance' .

# The comparison's properties against real sims in a stage of their own
# (.ci/run runs it after test-endurance): 100 runs of two identical sims,
# twenty pairs at a time, called worse in at most 7 by the bootstrap (the
# sequences' ten pairs are test-compare-aa's); a canary 20 % slower than the default sim
# called so within 60 s; infertop compare of two saved runs, a canary
# 20 % slower exiting 1. Without -race: it distorts
# the two sims' timing (one of two identical sims was 10-16 % slower at
# TTFT p50 under it). -v for the figures (the count, the time to verdict).
test-compare:
	INFERTOP_COMPARE=1 go test -count=1 -v -timeout 10m -run 'TestPairFalsePositives|TestPairDefaultSim' ./session
	go test -count=1 -v -run 'TestCompareSavedRuns' .

# The confidence sequences against ten identical pairs of real sims read
# every second for 80 s, never to call a difference: by hand (80 s). The
# sims' steps are a small model's (20 ms): with 2 ms steps, twenty sims
# on two cores spent most of a TTFT waiting for the scheduler, and the
# side it favoured stayed favoured all run (3 of 10 called, the
# bootstrap 6 of the same 10, on a quiet machine); paced, 0 of 10 both,
# three runs out of three.
test-compare-aa:
	INFERTOP_COMPARE=1 go test -count=1 -v -timeout 10m -run 'TestPairAnytimeFalsePositives' ./session

# infertop watch against a real Prometheus (Debian's): four sims in two
# groups watched directly and through it, the same groups, rates and
# buckets, a slower canary called and an identical one not (90 s).
test-watch:
	INFERTOP_WATCH_PROMETHEUS=1 go test -count=1 -v -timeout 5m -run 'TestThroughPrometheus' ./watch

# The guides' commands: every ```sh sim block of README.md and
# docs/guide run as written, in bash, against the embedded sim (or the
# sims they start), each run cut to a few seconds, each dashboard started
# in tmux and quit; traffic to 127.0.0.1 only. Without -race: it runs the
# test binary as infertop, many times.
test-guides:
	INFERTOP_GUIDES=1 go test -count=1 -v -parallel 4 -timeout 10m -run 'TestGuideCommands' .

# The trace replay's timing: 1,000 arrivals 2 ms apart, each within 5 ms
# of its intended time by the sim's own receive times. A bound of
# milliseconds needs a machine that is not busy, and no race detector.
test-trace:
	INFERTOP_TRACE_TIMING=1 go test -count=1 -v -timeout 5m -run 'TestReplayTiming' ./load

# The official OpenAI SDK against the sim (.ci/run runs it after make
# test): the openai npm package, pinned in tools/sdkcheck's
# package-lock.json and installed there by npm ci, reads two sims on
# 127.0.0.1 (one that reasons first) as an application would:
# responses.stream().finalResponse()'s text and reasoning, and
# embeddings.create with its defaults (base64). Needs node and npm
# (.ci/run installs them). A few seconds once installed.
test-sdk:
	cd tools/sdkcheck && npm ci --no-audit --no-fund
	INFERTOP_SDK=1 go test -count=1 -v -run TestOpenAISDK ./tools/sdkcheck

# The slow stage: the capacity searches against the default sim at its
# own pace (minutes), kept out of make test's five-minute budget.
test-slow:
	INFERTOP_SLOW=1 go test -count=1 -v -timeout 20m -run 'TestKnees' ./capacity

build:
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o infertop .

# The container image, built without a Docker daemon or a registry
# (tools/image, go-containerregistry): on an empty base the static binary
# (as make build builds it, for linux/IMAGE_ARCH), the CA bundle of this
# machine (/etc/ssl/certs/ca-certificates.crt: apt-get install
# ca-certificates), user 65532:65532. IMAGE_OUT ending in .tar is docker
# save's format (docker load -i, crane push IMAGE_OUT REF, kind load
# image-archive); a folder, an OCI image layout. IMAGE is the name
# deploy/kubernetes' manifests run (TestImageNamed holds them to it).
IMAGE ?= ghcr.io/infertop/infertop:latest
IMAGE_OUT ?= infertop-image.tar
IMAGE_ARCH ?= amd64

image:
	go run ./tools/image --version $(VERSION) --name $(IMAGE) --arch $(IMAGE_ARCH) --out $(IMAGE_OUT)

bench:
	go test -run '^$$' -bench . -benchtime 2s ./...

# The lint .ci/run runs before make test: gofmt, the full go vet (make
# test's runs only vet's high-confidence checks) and staticcheck at a
# fixed version (go run fetches it; it is no dependency of the module).
lint:
	gofmt -l . | (! grep .)
	go vet ./...
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
