# Gate's build and test entry points. Every module listed in go.work is tested.
SHELL := /bin/bash
GO ?= go
MODULES := $(shell sed -n 's/^[[:space:]]*\.\/\([^[:space:]]*\).*/\1/p' go.work)
PKGS := $(addsuffix /...,$(addprefix ./,$(MODULES)))
TEST_FLAGS ?= -race -count=1 -timeout 20m

.PHONY: browser image-build-check test vet fmt-check unit run e2e bench miniqueen console-load wire ui ui-check ui-lint ui-test

## test: the README's test command and what CI runs: gofmt and vet, the committed web app checked
## against its source, the image build replayed, the race-enabled tests of every module, then the
## web app's component and browser tests (Debian's chromium, installed when missing)
test: fmt-check vet ui-check image-build-check
	$(GO) test $(TEST_FLAGS) $(PKGS)
	$(MAKE) ui-test

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
# Built, then exec'd (not `go run`, which exits 1 when its child is
# interrupted). gate-run takes the terminal's foreground process group
# (stack.Foreground), so a Ctrl-C reaches it and not make (which would die
# of the SIGINT, status 130): a clean Ctrl-C leaves make with status 0.
run:
	@mkdir -p .gate-run/bin && $(GO) build -o .gate-run/bin/gate-run ./libs/stack/cmd/gate-run
	exec .gate-run/bin/gate-run

## e2e: did the declared ceiling hold? gate-e2e load 50 3000 20 on an embedded stack
e2e:
	$(GO) run ./gate-e2e --embedded load 50 3000 20

## bench: what does Gate itself cost? every gate-bench scenario on an embedded stack
bench:
	$(GO) run ./gate-bench --embedded all

UI := gate-console/ui

## ui: build the console web app (Node 20, gate-console/ui) into gate-console/webapp/dist, which is committed
ui:
	cd $(UI) && npm ci && npm run build

## ui-check: rebuild the web app from source and fail when the committed dist differs
ui-check: ui
	@if [ -n "$$(git status --porcelain -- gate-console/webapp/dist)" ]; then git status --short -- gate-console/webapp/dist; echo "gate-console/webapp/dist differs from what gate-console/ui builds: run make ui and commit the result"; exit 1; fi

## browser: Debian's chromium for the browser tests, installed with apt-get when it is missing
## (playwright's own browser download cannot work on our machines)
browser:
	@command -v chromium >/dev/null 2>&1 || { echo "installing chromium (Debian package)"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

## ui-lint: the web app type-checks (tsc --noEmit) and lints clean (ESLint: typescript-eslint, react-hooks)
ui-lint:
	cd $(UI) && npm run typecheck && npm run lint

## ui-test: the web app's type check and lint, its component tests and its browser tests (chromium, against a real stack; an axe-core scan of every page)
ui-test: browser ui-lint
	cd $(UI) && npm run test:unit && npm run test:browser

## console-load: gate-console's read-route latency at 200 req/s and SSE fan-out to 200 clients, on an embedded stack
console-load:
	$(GO) run ./gate-console/cmd/console-load

## wire: regenerate the web app's TypeScript types from libs/wire
wire:
	$(GO) run ./libs/wire/cmd/tsgen

# The Dockerfile's stages as plain commands (deploy/dockerfile_test.go keeps
# the flags, the npm build and the binary list equal to the Dockerfile's):
# a broken image build fails here, where there is no Docker engine.
IMAGE_BINARIES := gate-api gate-relay gate-recorder gate-console
IMAGE_GO_FLAGS := -trimpath -ldflags="-s -w"

## image-build-check: the image build without Docker: the ui stage's npm build, then every binary and gate-probe with the image's go build flags
image-build-check:
	cd $(UI) && npm ci && npm run build
	@mkdir -p .gate-run/image
	@for b in $(IMAGE_BINARIES); do echo "CGO_ENABLED=0 go build $(IMAGE_GO_FLAGS) ./$$b"; CGO_ENABLED=0 $(GO) build $(IMAGE_GO_FLAGS) -o .gate-run/image/$$b ./$$b || exit 1; done
	CGO_ENABLED=0 $(GO) build $(IMAGE_GO_FLAGS) -o .gate-run/image/gate-probe ./deploy/cmd/gate-probe
