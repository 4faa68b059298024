# cadre's developer commands. `make test` is what CI runs.
GO ?= go

.PHONY: build test bench demo

build:
	$(GO) build -o bin/cadre ./cmd/cadre

test:
	$(GO) test -race -count=1 -timeout 40m ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1x ./local/ ./sqlite/

demo: build
	./bin/cadre demo
