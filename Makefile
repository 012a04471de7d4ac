# placementd — see README.md.
SHELL := /bin/bash
GO ?= go
CONFORMANCE_DIR ?= ../shared/conformance
CONFORMANCE_JOBS ?= 2
BIN := bin/placementd
# The commit stamped into the binary beside the release in
# cmd/placementd/version.go (`placementd version`: 0.10.0+COMMIT).
COMMIT ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)

# Every upstream conformance file must pass completely: `make test` runs them
# all (the foundation, allocations, candidates and policy issues together
# cover every file in ../shared/conformance/gabbits).
.PHONY: build run test unit conformance clean

# The foundation issue's files, which `make e2e` runs through the compose
# cluster's nodes in turn.
CONFORMANCE_REQUIRED := \
	basic-http microversion cors non-cors unicode confirm-auth \
	resource-provider resource-provider-links resource-provider-duplication \
	resource-provider-aggregates resource-provider-any-traits inventory \
	resource-classes resource-classes-1-6 resource-classes-1-7 \
	resource-classes-last-modified traits aggregate

# BUILD_FLAGS=-v lists each package as it is compiled (make run does).
BUILD_FLAGS ?=
build:
	CGO_ENABLED=0 $(GO) build $(BUILD_FLAGS) -trimpath -ldflags "-X main.commit=$(COMMIT)" -o $(BIN) ./cmd/placementd

# The first build compiles every dependency, which takes minutes on a
# small machine: say so, and list the packages as they compile.
run:
	@echo "== compiling bin/placementd (the first time compiles every dependency: a few minutes; packages are listed as they compile)"
	@$(MAKE) --no-print-directory build BUILD_FLAGS=-v
	./$(BIN) serve --http-addr 127.0.0.1:8778 --data-dir ./data

# Both suites run even when the first fails (a unit flake must not hide
# conformance, the suite users care most about); the end repeats each
# one's failures and the target fails if either did.
TEST_LOG ?= bin/test-logs
test:
	@mkdir -p $(TEST_LOG); unit=ok; conf=ok; \
	set -o pipefail; \
	$(MAKE) --no-print-directory unit 2>&1 | tee $(TEST_LOG)/unit.log || unit=FAILED; \
	$(MAKE) --no-print-directory conformance 2>&1 | tee $(TEST_LOG)/conformance.log || conf=FAILED; \
	echo "== make test: unit $$unit, conformance $$conf (logs in $(TEST_LOG))"; \
	if [ $$unit != ok ]; then echo "== unit failures:"; grep -E '^(--- FAIL|FAIL|panic:)' $(TEST_LOG)/unit.log | head -50 || tail -20 $(TEST_LOG)/unit.log; fi; \
	if [ $$conf != ok ]; then echo "== conformance failures:"; tail -40 $(TEST_LOG)/conformance.log; fi; \
	[ $$unit = ok ] && [ $$conf = ok ]

unit:
	$(GO) test -race ./...

conformance: build
	PLACEMENT_SERVER_CMD="$(CURDIR)/.ci/conformance-server.sh" /usr/bin/python3 $(CONFORMANCE_DIR)/run.py \
		--jobs $(CONFORMANCE_JOBS) --list-failures $(CONFORMANCE_DIR)/gabbits

clean:
	rm -rf bin data

# A 3-node docker compose cluster from the FROM-scratch image (the Helm
# chart's): the required conformance files through one client address
# spread over the nodes, then `docker kill` of the leader.
.PHONY: e2e
e2e: build
	CONFORMANCE_DIR="$(abspath $(CONFORMANCE_DIR))" CONFORMANCE_FILES="$(CONFORMANCE_REQUIRED)" cluster/e2e/e2e.sh

# The fault-injection soak (internal/faults): every nemesis over 3- and
# 5-node clusters for SOAK each, then the summary table.
SOAK ?= 30m
SOAK_NODES ?= 3,5
.PHONY: fault-soak
fault-soak:
	$(GO) test -count=1 -timeout 0 -run '^TestSoak$$' ./internal/faults/ -v -args -faults.soak $(SOAK) -faults.nodes $(SOAK_NODES)

# The load soak (internal/faults/loadsoak.go, docs/security.md): a mixed
# load (claims, candidate searches, writes, hostile requests) against a
# 3-node cluster of processes for SOAK_DURATION, the leader SIGKILLed every
# SOAK_KILL_EVERY; then lost writes, over-allocation, digests and each
# node's RSS, fds and goroutines against their baseline. Not in CI.
SOAK_DURATION ?= 30m
SOAK_KILL_EVERY ?= 3m
.PHONY: soak
soak:
	$(GO) test -count=1 -timeout 0 -run '^TestLoadSoak$$' ./internal/faults/ -v -args \
		-loadsoak.duration $(SOAK_DURATION) -loadsoak.kill-every $(SOAK_KILL_EVERY)

# The freeze scenario (internal/faults/freeze.go) FREEZE_TRIALS times: the
# leader frozen past the election timeout, a write acknowledged by the new
# leader, reads queued at the frozen one, then woken; no read may be stale.
FREEZE_TRIALS ?= 60
.PHONY: freeze-check
freeze-check:
	$(GO) test -count=1 -timeout 0 -run '^TestFreeze(TransferBack)?$$' ./internal/faults/ -v -args -faults.freeze $(FREEZE_TRIALS)

# The linearizability check on a WAN (internal/faults TestWAN): 5 voters over
# regions a,a,b,b,c with Raft links WAN_CHECK_RTT apart (± 30 ms), on the
# 150 ms timing profile, for WAN_CHECK under the WAN nemeses (the leader's
# region cut off, leader killed, minority cut off, hand-over).
WAN_CHECK ?= 3m
WAN_CHECK_RTT ?= 150ms
.PHONY: wan-check
wan-check:
	$(GO) test -count=1 -timeout 0 -run '^TestWAN$$' ./internal/faults/ -v -args -faults.wan $(WAN_CHECK) -faults.wan-rtt $(WAN_CHECK_RTT)

# Every fuzz target for FUZZTIME each, one at a time (go test -fuzz runs
# one target per invocation), with FUZZPARALLEL workers; FUZZ=Name runs
# only targets matching it. Minimizing a new interesting input is bounded
# by FUZZMINIMIZE: with Go's default (60 s) the large bodies of the
# reshaper and POST /allocations targets spent most of their time
# minimizing rather than fuzzing. Each target's output goes to
# FUZZLOG/<target>.log; the table at the end has its executions and
# whether it failed (a crasher is written to the package's
# testdata/fuzz/<target>/: keep it as a regression case).
FUZZTIME ?= 10m
FUZZMINIMIZE ?= 5s
FUZZPARALLEL ?= 1
FUZZ ?= .
FUZZLOG ?= /tmp/placementd-fuzz
FUZZ_PACKAGES := ./fsm ./httpapi ./httpapi/schema ./httpapi/policy
.PHONY: fuzz
fuzz:
	@mkdir -p $(FUZZLOG); : > $(FUZZLOG)/summary.txt; \
	for pkg in $(FUZZ_PACKAGES); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' | grep -E '$(FUZZ)'); do \
	    echo "== $$pkg $$f ($(FUZZTIME))"; \
	    if $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) \
	        -parallel $(FUZZPARALLEL) $$pkg > $(FUZZLOG)/$$f.log 2>&1; then r=ok; else r=FAILED; fi; \
	    execs=$$(grep -o 'execs: [0-9]*' $(FUZZLOG)/$$f.log | tail -1 | cut -d' ' -f2); \
	    printf '%-28s %-18s %6s %12s execs\n' $$f $$pkg $$r "$${execs:-0}" | tee -a $(FUZZLOG)/summary.txt; \
	  done; \
	done; \
	echo "== summary (logs in $(FUZZLOG))"; cat $(FUZZLOG)/summary.txt; ! grep -q FAILED $(FUZZLOG)/summary.txt

# Upstream Placement (Debian's packages, uwsgi + MariaDB) against
# placementd with 1 and 3 nodes: one table with ratios (bench/compare.sh).
.PHONY: bench-compare
bench-compare:
	bench/compare.sh

# The differential test (internal/difftest): the same random request
# stream to upstream Placement (Debian's python3-placement, SQLite) and to
# placementd, every answer compared; a divergence is shrunk to a minimal
# reproduction. SEEDS seeds from SEED on, STEPS requests each.
SEED ?= 1
SEEDS ?= 1
STEPS ?= 2000
.PHONY: difftest
difftest: build
	$(GO) test -count=1 -timeout 0 -run '^TestDifferential$$' ./internal/difftest/ -v -args \
		-difftest.bin $(CURDIR)/$(BIN) -difftest.seed $(SEED) -difftest.seeds $(SEEDS) -difftest.steps $(STEPS)

# The operator's guide's commands against real processes
# (docs/scripts/ops-check.sh); DOCKER=1 adds the image and compose cluster.
.PHONY: ops-check
ops-check: build
	docs/scripts/ops-check.sh

# The Helm chart (deploy/helm/placementd): helm lint, then deploy/'s Go
# test renders it with helm template for the ci/ values (the defaults alone
# refuse to render until auth is chosen; ci/defaults-values.yaml adds the
# Keystone settings they need), decodes
# every object strictly into the k8s.io/api types and checks the cluster's
# invariants. Helm is built from the Go module proxy at a pinned version
# (a few minutes the first time; kept in bin/tools).
HELM_VERSION ?= v3.22.0
HELM ?= $(CURDIR)/bin/tools/helm-$(HELM_VERSION)/helm
CHART := deploy/helm/placementd
.PHONY: deploy-check
deploy-check: $(HELM)
	@set -e; for v in $(CHART)/ci/*-values.yaml; do \
	  echo "== helm lint $$v"; $(HELM) lint --strict $(CHART) -f $$v; \
	  echo "== helm template $$v: $$($(HELM) template p $(CHART) -f $$v | grep -c '^kind:') objects"; \
	done
	cd deploy && HELM=$(HELM) $(GO) test -count=1 -v ./...

$(HELM):
	GOBIN=$(dir $(HELM)) CGO_ENABLED=0 $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

# The WAN lab benchmark (bench/cmd/wan-bench, docs/wan-lab.md): placementd
# nodes as processes in network namespaces with delay added by the
# project's NFQUEUE delayer; one table row per node RTT (MS or MS/JITTER).
# Needs root; bounded by WAN_TIMEOUT; not part of `make test`.
WAN_RTTS ?= 0,20,80,150,80/20
WAN_NODES ?= 3
WAN_REQUESTS ?= 100
WAN_FAILOVERS ?= 3
WAN_IDLE ?= 1m
WAN_LOAD ?= 0
WAN_CLIENT_RTT ?= -1
WAN_FLAGS ?=
WAN_FLAGS_B ?=
WAN_BIN_B ?=
WAN_REGIONS ?=
WAN_REGION_CUTS ?= 1
WAN_SETTLE ?= 0s
WAN_TIMEOUT ?= 30m
.PHONY: wan-bench
wan-bench:
	$(GO) run ./bench/cmd/wan-bench -rtts '$(WAN_RTTS)' -nodes $(WAN_NODES) -requests $(WAN_REQUESTS) \
		-failovers $(WAN_FAILOVERS) -idle $(WAN_IDLE) -load $(WAN_LOAD) -client-rtt $(WAN_CLIENT_RTT) -serve-flags '$(WAN_FLAGS)' -serve-flags-b '$(WAN_FLAGS_B)' \
		-regions '$(WAN_REGIONS)' -region-cuts $(WAN_REGION_CUTS) -bin-b '$(WAN_BIN_B)' -settle $(WAN_SETTLE) -timeout $(WAN_TIMEOUT)
