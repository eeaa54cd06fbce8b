# One image per Gate binary, built from the workspace:
#   docker build --build-arg BINARY=gate-relay -t gate-relay .
# BINARY is one of gate-api, gate-relay, gate-recorder, gate-console.
# compose.yaml builds every Gate service this way. `make image-build-check`
# replays the ui and build stages as plain commands (the same npm build, the
# same go build flags), so a broken image build fails in `make test` first.

# The console's web app (gate-console/ui -> gate-console/webapp/dist).
FROM node:20.19-bookworm-slim AS ui
WORKDIR /src/gate-console/ui
COPY gate-console/ui/package.json gate-console/ui/package-lock.json ./
RUN npm ci
COPY gate-console/ui/ ./
# The web app imports the document's JSON Schema from libs/schema.
COPY libs/schema/graph.schema.json /src/libs/schema/graph.schema.json
RUN npm run build

FROM golang:1.26.8 AS build
ARG BINARY=gate-api
WORKDIR /src
COPY go.work go.work.sum ./
COPY internal/go.mod internal/
COPY libs/go.mod libs/go.sum libs/
COPY gate-api/go.mod gate-api/go.sum gate-api/
COPY gate-relay/go.mod gate-relay/go.sum gate-relay/
COPY gate-e2e/go.mod gate-e2e/go.sum gate-e2e/
COPY gate-bench/go.mod gate-bench/go.sum gate-bench/
COPY gate-recorder/go.mod gate-recorder/go.sum gate-recorder/
COPY gate-console/go.mod gate-console/go.sum gate-console/
COPY deploy/go.mod deploy/go.sum deploy/
COPY migrations/go.mod migrations/
RUN go mod download
COPY . .
COPY --from=ui /src/gate-console/webapp/dist gate-console/webapp/dist
RUN case "${BINARY}" in gate-api|gate-relay|gate-recorder|gate-console) ;; \
      *) echo "BINARY=${BINARY}: build one of gate-api, gate-relay, gate-recorder, gate-console" >&2; exit 1;; esac
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/gate ./${BINARY}
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/gate-probe ./deploy/cmd/gate-probe

# Static, non-root, no shell: the binary and its health probe.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/gate /usr/local/bin/gate
COPY --from=build /out/gate-probe /usr/local/bin/gate-probe
USER nonroot
ENTRYPOINT ["/usr/local/bin/gate"]
