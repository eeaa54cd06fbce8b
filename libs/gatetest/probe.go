package gatetest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/moby/moby/client"
	"github.com/nats-io/nats.go"
	"github.com/testcontainers/testcontainers-go"
)

// probeTimeout bounds every probe so a dead endpoint costs a test at most this.
const probeTimeout = 3 * time.Second

// probeCache remembers probe results for the life of the test binary: the
// environment does not change between tests, and re-probing per test would
// cost seconds when something does not answer.
type probeCache struct {
	mu      sync.Mutex
	results map[string]error
}

var probes = probeCache{results: map[string]error{}}

// answer runs probe once per key and returns its (cached) result.
func (c *probeCache) answer(key string, probe func(ctx context.Context) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err, ok := c.results[key]; ok {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	err := probe(ctx)
	c.results[key] = err
	return err
}

// inputsFor gathers Decide's inputs for component c from the environment,
// running only the probes that can matter.
func inputsFor(c Component) Inputs {
	in := Inputs{
		EnvURL:      strings.TrimSpace(os.Getenv(envVarFor(c))),
		RequireLive: RequireLive(),
	}
	if in.EnvURL != "" {
		in.EnvErr = probes.answer(string(c)+" "+in.EnvURL, func(ctx context.Context) error { return probeURL(ctx, c, in.EnvURL) })
		return in
	}
	switch c {
	case ComponentPostgres:
		in.LocalAnswers = probes.answer("postgres local", func(ctx context.Context) error { return probePostgres(ctx, LocalPostgresURL) }) == nil
		if !in.LocalAnswers {
			in.DockerAnswers = dockerAnswers()
		}
	case ComponentNATS:
		in.LocalAnswers = probes.answer("nats local", func(ctx context.Context) error { return probeNATS(ctx, LocalNATSURL) }) == nil
	case ComponentBroker:
		in.DockerAnswers = dockerAnswers()
	}
	return in
}

func probeURL(ctx context.Context, c Component, url string) error {
	switch c {
	case ComponentBroker:
		return probeQueen(ctx, url)
	case ComponentPostgres:
		return probePostgres(ctx, url)
	case ComponentNATS:
		return probeNATS(ctx, url)
	}
	return fmt.Errorf("unknown component %q", c)
}

// probeQueen asks a broker for GET /health and wants a 200.
func probeQueen(ctx context.Context, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/health", nil)
	if err != nil {
		return fmt.Errorf("building health request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("GET /health: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /health answered %d, want 200", resp.StatusCode)
	}
	return nil
}

// probePostgres connects and runs one query.
func probePostgres(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer conn.Close(context.Background())
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("SELECT 1: %w", err)
	}
	return nil
}

// probeNATS connects and flushes one round trip.
func probeNATS(ctx context.Context, url string) error {
	deadline, _ := ctx.Deadline()
	nc, err := nats.Connect(url, nats.Timeout(time.Until(deadline)), nats.NoReconnect())
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer nc.Close()
	if err := nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	return nil
}

// dockerAnswers reports whether a Docker engine answers a ping. Without a
// socket or DOCKER_HOST it answers false at once, without touching
// testcontainers.
func dockerAnswers() bool {
	if truthy(os.Getenv(EnvNoDocker)) {
		return false
	}
	return probes.answer("docker", probeDocker) == nil
}

func probeDocker(ctx context.Context) error {
	if !dockerConfigured() {
		return fmt.Errorf("no DOCKER_HOST and no docker socket")
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return fmt.Errorf("docker client: %w", err)
	}
	defer cli.Close()
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		return fmt.Errorf("docker ping: %w", err)
	}
	return nil
}

// dockerConfigured reports whether there is any sign of a Docker engine to
// talk to: DOCKER_HOST, TESTCONTAINERS_HOST_OVERRIDE, or a known socket path.
func dockerConfigured() bool {
	if os.Getenv("DOCKER_HOST") != "" {
		return true
	}
	sockets := []string{"/var/run/docker.sock", "/run/docker.sock"}
	if home, err := os.UserHomeDir(); err == nil {
		sockets = append(sockets,
			filepath.Join(home, ".docker", "run", "docker.sock"),
			filepath.Join(home, ".docker", "desktop", "docker.sock"),
			filepath.Join(home, ".colima", "default", "docker.sock"))
	}
	if dir := os.Getenv("XDG_RUNTIME_DIR"); dir != "" {
		sockets = append(sockets, filepath.Join(dir, "docker.sock"), filepath.Join(dir, "podman", "podman.sock"))
	}
	for _, s := range sockets {
		if fi, err := os.Stat(s); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return true
		}
	}
	return false
}
