# The test suite: everything with the race detector, then the client-versus-
# server accuracy test again without it, against its 2 ms bound at p50
# (the race detector's slowdown of both HTTP stacks is larger than that).
.PHONY: test build bench lint

test:
	go vet ./...
	go test -race -count=1 ./...
	go test -count=1 -run 'TestEngineMatchesSim' ./load

build:
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o infertop .

bench:
	go test -run '^$$' -bench . -benchtime 2s ./...

lint:
	gofmt -l . | (! grep .)
	go vet ./...
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
