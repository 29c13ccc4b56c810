# The test suite: everything with the race detector, one package at a time
# (the timing tests of load and sim share two cores badly), then the
# client-versus-server accuracy test again without it, against its 2 ms / 5 %
# bounds (the race detector's slowdown of both HTTP stacks is larger).
# -p 1 serializes the builds too, so a first pass that runs no test builds
# everything on every core. go test runs vet's high-confidence checks
# itself; the full vet is in lint (a separate vet compiles every dependency
# again without -race). Cold cache on two cores: 4 m 38 s (5 m 33 s with
# the vet and the builds one at a time); warm: under 3 minutes.
.PHONY: test test-slow build bench lint

test:
	go test -race -count=1 -run '^$$' ./... >/dev/null
	go test -race -count=1 -p 1 ./...
	go test -count=1 -run 'TestEngineMatchesSim' ./load

# The slow stage: searches and comparisons against the default sim at its
# own pace (minutes), kept out of make test's eight-minute budget.
test-slow:
	INFERTOP_SLOW=1 go test -count=1 -timeout 20m -run 'TestKnees|TestPairDefaultSim|TestPairIdenticalSims' ./capacity ./compare

build:
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o infertop .

bench:
	go test -run '^$$' -bench . -benchtime 2s ./...

lint:
	gofmt -l . | (! grep .)
	go vet ./...
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
