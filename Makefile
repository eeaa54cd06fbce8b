# Gate's build and test entry points. Every module listed in go.work is tested.
SHELL := /bin/bash
GO ?= go
MODULES := $(shell sed -n 's/^[[:space:]]*\.\/\([^[:space:]]*\).*/\1/p' go.work)
PKGS := $(addsuffix /...,$(addprefix ./,$(MODULES)))
TEST_FLAGS ?= -race -count=1 -timeout 20m

.PHONY: test vet fmt-check unit run e2e bench miniqueen console-load wire

## test: vet, gofmt check and the race-enabled tests of every module (the README's test command)
test: fmt-check vet
	$(GO) test $(TEST_FLAGS) $(PKGS)

## unit: the quick loop, -short skips the slow live suites
unit:
	$(GO) test -short -count=1 $(PKGS)

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

## miniqueen: the in-memory Queen-compatible test broker on 127.0.0.1:6632
miniqueen:
	$(GO) run ./libs/miniqueen/cmd/miniqueen --addr 127.0.0.1:6632

## run: a local stack (miniqueen unless QUEEN_URL answers, NATS, gate-api, gate-relay) with a demo graph; Ctrl-C stops it
run:
	$(GO) run ./libs/stack/cmd/gate-run

## e2e: did the declared ceiling hold? gate-e2e load 50 3000 20 on an embedded stack
e2e:
	$(GO) run ./gate-e2e --embedded load 50 3000 20

## bench: what does Gate itself cost? every gate-bench scenario on an embedded stack
bench:
	$(GO) run ./gate-bench --embedded all

## console-load: gate-console's read-route latency at 200 req/s and SSE fan-out to 200 clients, on an embedded stack
console-load:
	$(GO) run ./gate-console/cmd/console-load

## wire: regenerate the web app's TypeScript types from libs/wire
wire:
	$(GO) run ./libs/wire/cmd/tsgen
