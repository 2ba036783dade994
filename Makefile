# Zaris — common tasks. `make test` is what CI runs (.ci/run).
GO ?= go
PKGS ?= ./...
BENCHTIME ?= 1s

.PHONY: run test test-short test-stress bench lint fuzz build tools cluster cluster-stop storm mem-per-key test-secret console-screenshots

## run: build bin/zaris-server, then run a single-node server on the embedded default configuration (Ctrl-C stops it, exit 0)
run:
	@echo "building bin/zaris-server …"
	@$(GO) build -o bin/zaris-server ./cmd/zaris-server
	@echo "starting a single node: native 127.0.0.1:7861, RESP 127.0.0.1:6380, HTTP http://127.0.0.1:7801 (Ctrl-C to stop)"
	@if [ -t 0 ] && [ -t 1 ]; then set -m; fi; bin/zaris-server; rc=$$?; if [ $$rc -eq 130 ] || [ $$rc -eq 0 ]; then exit 0; else exit $$rc; fi

# Ctrl-C on a terminal signals the whole foreground process group, make
# included, and make then reports "*** [run] Interrupt" and fails whatever
# the server answers. With job control (set -m) bash runs the server in its
# own foreground group: Ctrl-C reaches only the server, which stops cleanly
# and exits 0, so make run exits 0. Only on a terminal (stdin and stdout):
# with output redirected make reports the interrupt as before.
run: SHELL := /bin/bash

## cluster: start a 3-node cluster on loopback in the background (scripts/cluster.sh)
cluster:
	scripts/cluster.sh start

## cluster-stop: stop the cluster started by `make cluster`
cluster-stop:
	scripts/cluster.sh stop

## build: compile every binary into ./bin (gitignored)
build:
	$(GO) build -o bin/ ./cmd/...

## test: the whole suite with the race detector (what CI runs, after make lint's gofmt and vet). TEST_P test binaries run at once: 2 (one per core here). At 4, three idle runs of 2026-12-02 in a row each failed somewhere (four race-built binaries of multi-node clusters starve each other's raft and memberlist timers on 2 cores: leaders flap, moves abort), while the suite beside a CPU hog at 2 binaries passed (DECISIONS D58)
TEST_P ?= 2
# SLOW_FIRST: the longest test binaries are named first so that go test
# builds and starts them first: started last, they made the suite's tail.
SLOW_FIRST = $(if $(filter ./...,$(PKGS)),./sdk ./server/resp ./test/chaos ./server/clustertest)
# TESTFLAGS: extra go test flags for test and test-stress (e.g. -json, to time every test).
TESTFLAGS ?=
test:
	$(GO) test -race -count=1 -p $(TEST_P) -timeout 30m $(TESTFLAGS) $(SLOW_FIRST) $(PKGS)

## console-screenshots: rerun the web console's browser test against a live cluster and refresh docs/console/*.png (needs chromium)
console-screenshots:
	mkdir -p docs/console
	ZARIS_CONSOLE_SCREENSHOTS=$(CURDIR)/docs/console $(GO) test -count=1 -run '^TestConsoleInChromium$$' -v ./server/clustertest/

## test-stress: the whole suite while a CPU hog (internal/hog/cmd/hog) runs 2 × the CPU count of spinners; the hog stops when the suite ends, pass or fail. STRESS_SCALE sets ZARIS_TEST_TIME_SCALE (test deadlines and test-cluster timings)
STRESS_SCALE ?= 2
test-stress:
	$(GO) build -o bin/hog ./internal/hog/cmd/hog
	@bin/hog & hog=$$!; trap 'kill $$hog 2>/dev/null; wait $$hog 2>/dev/null' EXIT INT TERM; \
	start=$$(date +%s); \
	ZARIS_TEST_TIME_SCALE=$(STRESS_SCALE) $(GO) test -race -count=1 -timeout 60m $(TESTFLAGS) $(SLOW_FIRST) $(PKGS); rc=$$?; \
	echo "test-stress: exit $$rc after $$(( $$(date +%s) - start )) s (hog: 2 x $$(nproc) spinners, ZARIS_TEST_TIME_SCALE=$(STRESS_SCALE))"; \
	exit $$rc

## test-secret: the cluster tests with every test cluster secured by a cluster secret (ZARIS_TEST_CLUSTER_SECRET=1: encrypted gossip, authenticated peer connections)
test-secret:
	ZARIS_TEST_CLUSTER_SECRET=1 $(GO) test -count=1 -timeout 30m ./server/clustertest/ ./server/replication/ ./server/resp/ ./sdk/

## test-short: the quick suite (skips multi-process end-to-end tests)
test-short:
	$(GO) test -short -count=1 $(PKGS)

## bench: every Go benchmark once; figures go to docs/BENCHMARKS.md
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $(PKGS)

## bench-migration: one live migration of MIGRATION_KEYS keys of 100 B (default 1 000 000) from one node to a joining one: keys/s, MB/s, foreground p50/p99 during the move vs steady state, longest write-fence pause (docs/BENCHMARKS.md "Live migration")
MIGRATION_KEYS ?= 1000000
.PHONY: bench-migration
bench-migration:
	ZARIS_MIGRATION_KEYS=$(MIGRATION_KEYS) $(GO) test -run '^$$' -bench BenchmarkLiveMigration -benchtime 1x -timeout 30m ./sdk/

## fuzz: run each fuzz target for FUZZTIME (default 30s)
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzSlot -fuzztime $(FUZZTIME) ./internal/placement/
	$(GO) test -run '^$$' -fuzz FuzzPeerAuthAccept -fuzztime $(FUZZTIME) ./server/cluster/
	$(GO) test -run '^$$' -fuzz FuzzPeerAuthDial -fuzztime $(FUZZTIME) ./server/cluster/
	$(GO) test -run '^$$' -fuzz FuzzNativeMatchesRESP -fuzztime $(FUZZTIME) ./server/resp/
	$(GO) test -run '^$$' -fuzz FuzzRecordTable -fuzztime $(FUZZTIME) ./server/store/
	$(GO) test -run '^$$' -fuzz FuzzFieldTable -fuzztime $(FUZZTIME) ./server/store/
	$(GO) test -run '^$$' -fuzz FuzzListOps -fuzztime $(FUZZTIME) ./server/store/
	$(GO) test -run '^$$' -fuzz FuzzIDSeq -fuzztime $(FUZZTIME) ./server/store/
	$(GO) test -run '^$$' -fuzz FuzzPagedLikeFlat -fuzztime $(FUZZTIME) ./server/store/

## fuzz-resp: the differential fuzzer (internal/respdiff) against a real redis-server for FUZZTIME (make fuzz-resp FUZZTIME=10m), seeded by the clock (FUZZSEED=n replays a seed; FUZZONLY=xadd,xgroup,set draws only those commands); prints the seed, commands/s and the mismatches with their reproducers
FUZZSEED ?=
FUZZONLY ?=
.PHONY: fuzz-resp
fuzz-resp:
	ZARIS_DIFFFUZZ_TIME=$(FUZZTIME) ZARIS_DIFFFUZZ_SEED=$(FUZZSEED) ZARIS_DIFFFUZZ_ONLY=$(FUZZONLY) $(GO) test -count=1 -timeout 0 -run '^TestDiffFuzz$$' -v ./server/resp/

## chaos: the multi-process chaos harness (test/chaos): faults against real zaris-server processes; prints acked/lost/stale_reads/unavailable_ms (SCENARIO=failover-time|throughput|slow|elastic too; elastic: +2 nodes, a drain and a fault mid-move, prints moves and fixed_lost; slow: RF 1, default timings, CPU hog + short SIGSTOPs, prints promotions/unavailable)
DURATION ?= 60s
SCENARIO ?= chaos
ifeq ($(SCENARIO),slow)
RF ?= 1
MODE ?= async
endif
RF ?= 3
MODE ?= sync
QUORUM ?= majority
.PHONY: chaos
chaos:
	$(GO) run ./test/chaos/cmd/chaos -duration $(DURATION) -rf $(RF) -mode $(MODE) -quorum $(QUORUM) -scenario $(SCENARIO)

## soak: the long soak (test/chaos/soak.go): strings, hashes, lists, sets, sorted sets, streams, transfers in transactions, pub/sub and a watch through the SDK and go-redis's ClusterClient on 3 processes at RF 2 sync (quorum all), a kill -9 or a SIGSTOP every 30 s; asserts lost = 0, no stale read, the transfer total, delivery after the last repair, no RSS/goroutine growth from the first to the last window; prints a summary table. DURATION defaults to 1h here; SOAK_FLAGS passes more (e.g. -seed N, -extra --oplog-max-ops=1024)
SOAK_DURATION = $(if $(filter file,$(origin DURATION)),1h,$(DURATION))
SOAK_FLAGS ?=
.PHONY: soak
soak:
	$(GO) run ./test/chaos/cmd/chaos -scenario soak -duration $(SOAK_DURATION) $(SOAK_FLAGS)

## storm: the --memory-max-rss write storm against the real binary (a key space of 3 × the cap, RSS sampled from /proc); prints peak/mean RSS against the bound. STORM_RSS=0 measures without the bound
STORM_DURATION ?= 5m
STORM_CAP ?= 256MiB
STORM_RSS ?=
storm:
	ZARIS_STORM_DURATION=$(STORM_DURATION) ZARIS_STORM_CAP=$(STORM_CAP) ZARIS_STORM_RSS=$(STORM_RSS) \
		$(GO) test -count=1 -timeout 60m -run TestWriteStormKeepsRSSUnderTheBound -v ./cmd/zaris-server/

## bench-redis: Zaris vs redis-server side by side (scripts/bench-vs-redis.sh, issue #17): redis-benchmark RESP table, zaris-bench native table, RSS per key, server CPU per request; markdown on stdout. ROUNDS=3 (default), QUICK=1 for a one-minute smoke run
.PHONY: bench-redis
bench-redis:
	ROUNDS=$(ROUNDS) QUICK=$(QUICK) scripts/bench-vs-redis.sh

## bench-commands: per-command rate against redis-server (scripts/bench-commands.sh, issue #17): every redis-benchmark -t test, then commands on 100 k-element collections and a 1 MB string; markdown on stdout. ROUNDS=1 (default), PIPELINE=16
.PHONY: bench-commands
bench-commands:
	ROUNDS=$(ROUNDS) scripts/bench-commands.sh

## compat-goredis: go-redis's own test suite (the pinned version's core specs) against redis-server and then a one-node Zaris on port 6379 (scripts/goredis-suite.sh); prints both pass counts and the specs that fail only on Zaris
.PHONY: compat-goredis
compat-goredis:
	scripts/goredis-suite.sh

## mem-per-key: RSS growth per key (1 M keys, 16 B / 32 B) of zaris-server, and of redis-server when installed
mem-per-key:
	ZARIS_MEASURE_PER_KEY=1 $(GO) test -count=1 -timeout 30m -run TestRSSPerKey -v ./cmd/zaris-server/

## lint: formatting and vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
