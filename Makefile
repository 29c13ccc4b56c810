# The test suite: everything with the race detector, one package at a time
# (the timing tests of load and sim share two cores badly), then the
# client-versus-server accuracy test again without it, against its 2 ms / 5 %
# bounds (the race detector's slowdown of both HTTP stacks is larger).
.PHONY: test build bench lint

test:
	go vet ./...
	go test -race -count=1 -p 1 ./...
	go test -count=1 -run 'TestEngineMatchesSim' ./load

build:
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o infertop .

bench:
	go test -run '^$$' -bench . -benchtime 2s ./...

lint:
	gofmt -l . | (! grep .)
	go vet ./...
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
