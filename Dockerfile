# One image per Gate binary, built from the workspace:
#   docker build --build-arg BINARY=gate-relay -t gate-relay .
# compose.yaml builds gate-api and gate-relay this way.
FROM golang:1.26 AS build
ARG BINARY=gate-api
WORKDIR /src
COPY go.work go.work.sum ./
COPY libs/go.mod libs/go.sum libs/
COPY gate-api/go.mod gate-api/go.sum gate-api/
COPY gate-relay/go.mod gate-relay/go.sum gate-relay/
COPY gate-e2e/go.mod gate-e2e/go.sum gate-e2e/
COPY gate-bench/go.mod gate-bench/go.sum gate-bench/
COPY gate-recorder/go.mod gate-recorder/go.sum gate-recorder/
COPY migrations/go.mod migrations/
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/gate ./${BINARY}

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/gate /usr/local/bin/gate
USER nonroot
ENTRYPOINT ["/usr/local/bin/gate"]
