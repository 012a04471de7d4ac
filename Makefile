# placementd — see README.md.
SHELL := /bin/bash
GO ?= go
CONFORMANCE_DIR ?= ../shared/conformance
CONFORMANCE_JOBS ?= 2
BIN := bin/placementd
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

# Conformance files that must pass completely: those of the resolved issues.
CONFORMANCE_REQUIRED := \
	basic-http microversion cors non-cors unicode confirm-auth \
	resource-provider resource-provider-links resource-provider-duplication \
	resource-provider-aggregates resource-provider-any-traits inventory \
	resource-classes resource-classes-1-6 resource-classes-1-7 \
	resource-classes-last-modified traits aggregate

.PHONY: build run test unit conformance conformance-required clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/placementd

run: build
	./$(BIN) serve --http-addr 127.0.0.1:8778 --data-dir ./data

test: unit conformance-required

unit:
	$(GO) test -race ./...

conformance-required: build
	PLACEMENT_SERVER_CMD="$(CURDIR)/.ci/conformance-server.sh" /usr/bin/python3 $(CONFORMANCE_DIR)/run.py \
		--jobs $(CONFORMANCE_JOBS) --list-failures \
		$(addprefix $(CONFORMANCE_DIR)/gabbits/,$(addsuffix .yaml,$(CONFORMANCE_REQUIRED)))

conformance: build
	PLACEMENT_SERVER_CMD="$(CURDIR)/.ci/conformance-server.sh" /usr/bin/python3 $(CONFORMANCE_DIR)/run.py \
		--jobs $(CONFORMANCE_JOBS) --list-failures $(CONFORMANCE_DIR)/gabbits

clean:
	rm -rf bin data
