# Gate's build and test entry points. Every module listed in go.work is tested.
SHELL := /bin/bash
GO ?= go
MODULES := $(shell sed -n 's/^[[:space:]]*\.\/\([^[:space:]]*\).*/\1/p' go.work)
PKGS := $(addsuffix /...,$(addprefix ./,$(MODULES)))
TEST_FLAGS ?= -race -count=1 -timeout 20m

.PHONY: test vet fmt-check unit run e2e bench miniqueen

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
