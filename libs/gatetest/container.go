package gatetest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Images the container path starts.
const (
	// QueenImage is the broker image, run with PG_HOST pointing at PostgresImage.
	QueenImage = "ghcr.io/queen-mq/queen:latest"
	// PostgresImage is the PostgreSQL image for tests and for Queen.
	PostgresImage = "postgres:18"
)

// containerStartTimeout bounds pulling and starting one container stack.
const containerStartTimeout = 5 * time.Minute

// sharedContainer starts one container stack the first time a test needs it
// and hands every later test the same URL. Containers live for the test binary
// and are removed by testcontainers' reaper when it exits; tests isolate
// themselves inside it (a queue prefix or a schema each).
type sharedContainer struct {
	once sync.Once
	url  string
	err  error
}

var (
	queenContainer    sharedContainer
	postgresContainer sharedContainer
)

func (s *sharedContainer) get(start func(ctx context.Context) (string, error)) (string, error) {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), containerStartTimeout)
		defer cancel()
		s.url, s.err = start(ctx)
	})
	return s.url, s.err
}

// startPostgresContainer runs postgres:18 with trust authentication and returns
// its URL.
func startPostgresContainer(ctx context.Context) (string, error) {
	ctr, err := testcontainers.Run(ctx, PostgresImage,
		testcontainers.WithEnv(map[string]string{"POSTGRES_HOST_AUTH_METHOD": "trust"}),
		testcontainers.WithExposedPorts("5432/tcp"),
		testcontainers.WithWaitStrategy(
			wait.ForLog("database system is ready to accept connections").WithOccurrence(2),
			wait.ForListeningPort("5432/tcp")),
	)
	if err != nil {
		return "", fmt.Errorf("starting %s: %w", PostgresImage, err)
	}
	hostPort, err := ctr.PortEndpoint(ctx, "5432/tcp", "")
	if err != nil {
		return "", fmt.Errorf("reading the mapped Postgres port: %w", err)
	}
	return "postgres://postgres@" + hostPort + "/postgres?sslmode=disable", nil
}

// startQueenContainer runs the Queen image against its own postgres:18 on a
// private network (the product description's two docker commands) and returns
// the broker's base URL once GET /health answers 200.
func startQueenContainer(ctx context.Context) (string, error) {
	nw, err := network.New(ctx)
	if err != nil {
		return "", fmt.Errorf("creating a docker network for Queen: %w", err)
	}
	_, err = testcontainers.Run(ctx, PostgresImage,
		network.WithNetwork([]string{"queen-pg"}, nw),
		testcontainers.WithEnv(map[string]string{"POSTGRES_PASSWORD": "postgres"}),
		testcontainers.WithWaitStrategy(
			wait.ForLog("database system is ready to accept connections").WithOccurrence(2)),
	)
	if err != nil {
		return "", fmt.Errorf("starting %s for Queen: %w", PostgresImage, err)
	}
	queen, err := testcontainers.Run(ctx, QueenImage,
		network.WithNetwork([]string{"queen"}, nw),
		testcontainers.WithEnv(map[string]string{
			"PG_HOST":          "queen-pg",
			"PG_PASSWORD":      "postgres",
			"QUEEN_KV_ENABLED": "true", // needed by 1.0.4; ignored by later brokers
		}),
		testcontainers.WithExposedPorts("6632/tcp"),
		testcontainers.WithWaitStrategy(
			wait.ForHTTP("/health").WithPort("6632/tcp").WithStartupTimeout(2*time.Minute)),
	)
	if err != nil {
		return "", fmt.Errorf("starting %s: %w", QueenImage, err)
	}
	endpoint, err := queen.PortEndpoint(ctx, "6632/tcp", "http")
	if err != nil {
		return "", fmt.Errorf("reading the mapped Queen port: %w", err)
	}
	return endpoint, nil
}
