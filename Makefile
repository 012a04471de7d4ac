# placementd — see README.md.
SHELL := /bin/bash
GO ?= go
CONFORMANCE_DIR ?= ../shared/conformance
CONFORMANCE_JOBS ?= 2
BIN := bin/placementd
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

# Every upstream conformance file must pass completely: `make test` runs them
# all (the foundation, allocations, candidates and policy issues together
# cover every file in ../shared/conformance/gabbits).
.PHONY: build run test unit conformance clean

# The foundation issue's files, which `make e2e` runs through a follower of
# the compose cluster.
CONFORMANCE_REQUIRED := \
	basic-http microversion cors non-cors unicode confirm-auth \
	resource-provider resource-provider-links resource-provider-duplication \
	resource-provider-aggregates resource-provider-any-traits inventory \
	resource-classes resource-classes-1-6 resource-classes-1-7 \
	resource-classes-last-modified traits aggregate

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/placementd

run: build
	./$(BIN) serve --http-addr 127.0.0.1:8778 --data-dir ./data

test: unit conformance

unit:
	$(GO) test -race ./...

conformance: build
	PLACEMENT_SERVER_CMD="$(CURDIR)/.ci/conformance-server.sh" /usr/bin/python3 $(CONFORMANCE_DIR)/run.py \
		--jobs $(CONFORMANCE_JOBS) --list-failures $(CONFORMANCE_DIR)/gabbits

clean:
	rm -rf bin data

# A 3-node docker compose cluster from the FROM-scratch image: the required
# conformance files through a follower, then `docker kill` of the leader.
.PHONY: e2e
e2e:
	CONFORMANCE_DIR="$(abspath $(CONFORMANCE_DIR))" CONFORMANCE_FILES="$(CONFORMANCE_REQUIRED)" cluster/e2e/e2e.sh
