# cadre's developer commands. `make test` is what CI runs.
GO ?= go

.PHONY: build test bench bench-scale demo fuzz soak

build:
	$(GO) build -o bin/cadre ./cmd/cadre

test:
	$(GO) test -race -count=1 -timeout 40m ./...

# Benchmarks print figures and check none. BENCH selects some of them
# (make bench BENCH=FanOut/sync), BENCHTIME runs each longer (BENCHTIME=5x
# or 3s); see local/bench_test.go for what the engine's figures mean.
# make bench BENCH=Delegation prints the CPU per delegated child (see
# local/delegation_bench_test.go); BENCH=Resume what resuming a run of
# 1,000 and 10,000 stopped children costs; bench-scale adds 100,000 children.
# With CADRE_TEST_POSTGRES set (source .ci/postgres.sh), they run with
# PostgreSQL too.
BENCH ?= .
BENCHTIME ?= 1x

bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -benchtime $(BENCHTIME) -timeout 30m ./local/ ./sqlite/

bench-scale:
	CADRE_BENCH_SCALE=1 $(GO) test -run '^$$' -bench 'Scale|IdleAgents|Resume' -benchmem -benchtime 1x -timeout 60m ./local/

demo: build
	./bin/cadre demo

# Runs every fuzz target for FUZZTIME each (.ci/run runs them for 5s).
FUZZTIME ?= 5m

fuzz:
	FUZZTIME=$(FUZZTIME) bash .ci/fuzz.sh

# Kills a run of 50 agents SOAK times at random points and resumes it (see
# internal/cli/soak_test.go); make test kills it 5 times. CADRE_SOAK_SEED
# replays the kill points of a seed the output names. SOAK_STORE=postgres
# keeps the runs in PostgreSQL (CADRE_TEST_POSTGRES; source .ci/postgres.sh)
# instead of SQLite.
SOAK ?= 100
SOAK_STORE ?= sqlite

soak:
	CADRE_SOAK=$(SOAK) CADRE_SOAK_STORE=$(SOAK_STORE) $(GO) test -race -count=1 -run '^TestSoakKillAndResume$$' -v -timeout 120m ./internal/cli/
