package relay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-relay/config"
	"github.com/queen-mq/gate/gate-relay/relay"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/miniqueen"
)

// The relay's /health names the broker: 200 while it answers, 503 naming
// it while it does not. And a GATE_NATS_URL pointing at a dead server is
// never the relay's failure: SIGTERM still ends Run with no error.
func TestHealthNamesAnUnreachableBrokerAndADeadNATSDoesNotFailShutdown(t *testing.T) {
	t.Parallel()
	mini := miniqueen.RunT(t)
	cfg := config.Default()
	cfg.QueenURL, cfg.KVNamespace, cfg.Bind, cfg.Replica = mini.URL(), "health-test", freeAddr(t), "health-1"
	cfg.NATSURL = "nats://" + freeAddr(t) // nothing listens there
	cfg.PollTimeout, cfg.Lease, cfg.StatusPeriod, cfg.SignalPoll = time.Second, 2*time.Second, time.Second, 100*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx, cfg, relay.WithLogger(testLogger(t))) }()
	defer func() {
		cancel()
		<-done
	}()
	health := func() (int, map[string]any, error) {
		resp, err := http.Get("http://" + cfg.Bind + "/health")
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		var v map[string]any
		err = json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v, err
	}
	gatetest.EventuallyErr(t, 10*time.Second, func() error {
		code, v, err := health()
		if err != nil {
			return err
		}
		if code != http.StatusOK || v["status"] != "ok" {
			return fmt.Errorf("health %d %v, want 200 ok with the broker up", code, v)
		}
		return nil
	})
	mini.Stop()
	code, v, err := health()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := v["broker"].(map[string]any)
	if code != http.StatusServiceUnavailable || v["status"] != "unavailable" || b == nil || b["reachable"] != false ||
		!strings.Contains(b["error"].(string), "QUEEN_URL") {
		t.Fatalf("health with the broker gone: %d %v, want 503 naming the broker", code, v)
	}
	cancel()
	select {
	case err := <-done:
		done <- err
		if err != nil {
			t.Fatalf("Run after SIGTERM with a dead NATS: %v, want nil (exit 0)", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after SIGTERM")
	}
}
