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
	"github.com/queen-mq/gate/libs/gatetest/logsink"
	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/wire"
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
	log := testLogger(t)
	go func() { done <- relay.Run(ctx, cfg, relay.WithLogger(log)) }()
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

// A broker that is not the broker Gate needs — one without a kv store, as
// Queen 0.15.1 or 1.0.4 without QUEEN_KV_ENABLED — turns the relay's
// /health to 503 naming what it lacks and the fix, said once at ERROR
// (not a 404 warning per reconcile); once the broker has it again (the
// operator enabled kv), the relay probes again and /health turns 200.
func TestHealthNamesWhatTheBrokerLacksAndRecovers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		off    func(*miniqueen.Server, bool)
		lacks  string
		saying []string
	}{
		{"no kv store", (*miniqueen.Server).SetKVAbsent, "kv", []string{"kv incr with max", "QUEEN_KV_ENABLED=true", "1.0.4"}},
		{"a lease released by counting acks", (*miniqueen.Server).SetLeaseReleasedByAckCount, "ack", []string{"cumulative ack", "stayed leased", "1.0.4"}},
		{"no depth route", (*miniqueen.Server).SetDepthAbsent, "depth", []string{"depth route", "1.0.4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mini := miniqueen.RunT(t)
			tc.off(mini, true)
			sink := &logsink.Sink{}
			cfg := config.Default()
			cfg.QueenURL, cfg.KVNamespace, cfg.Bind, cfg.Replica = mini.URL(), "lacks-test", freeAddr(t), "lacks-1"
			cfg.PollTimeout, cfg.Lease, cfg.StatusPeriod, cfg.SignalPoll, cfg.Reconcile = time.Second, 2*time.Second, time.Second, 100*time.Millisecond, time.Second
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- relay.Run(ctx, cfg, relay.WithLogger(sink.JSON())) }()
			defer func() {
				cancel()
				<-done
			}()
			get := func() (int, wire.RelayHealth) {
				resp, err := http.Get("http://" + cfg.Bind + "/health")
				if err != nil {
					return 0, wire.RelayHealth{}
				}
				defer resp.Body.Close()
				var h wire.RelayHealth
				_ = json.NewDecoder(resp.Body).Decode(&h)
				return resp.StatusCode, h
			}
			gatetest.EventuallyErr(t, 20*time.Second, func() error {
				code, h := get()
				if code != http.StatusServiceUnavailable || h.Broker == nil || !h.Broker.Reachable {
					return fmt.Errorf("health %d %+v, want 503 with the broker reachable", code, h.Broker)
				}
				for _, w := range tc.saying {
					if !strings.Contains(h.Broker.Error, w) {
						return fmt.Errorf("health's error %q does not say %q", h.Broker.Error, w)
					}
				}
				for _, n := range h.Broker.Needs {
					if n.Need == tc.lacks && !n.Present && n.Fix != "" {
						return nil
					}
				}
				return fmt.Errorf("needs %+v do not list %s as missing with its fix", h.Broker.Needs, tc.lacks)
			})
			// Several reconciles later the problem was said once, at ERROR.
			time.Sleep(3 * time.Second)
			if n := sink.Count("the broker is not the broker Gate needs; this relay charges and forwards nothing that needs what it lacks, and /health answers 503 until it has it"); n != 1 {
				t.Fatalf("%d ERROR lines naming what the broker lacks, want exactly 1:\n%s", n, sink.String())
			}
			if n := sink.Count("reading the store failed; keeping what runs"); n != 0 {
				t.Errorf("%d store-read warnings: the ERROR line already says why", n)
			}
			tc.off(mini, false)
			gatetest.EventuallyErr(t, 20*time.Second, func() error {
				if code, h := get(); code != http.StatusOK {
					return fmt.Errorf("health %d %+v after the broker got %s back, want 200", code, h.Broker, tc.lacks)
				}
				return nil
			})
			if !sink.Has("the broker now has everything Gate needs") {
				t.Errorf("no line saying the broker has everything again:\n%s", sink.String())
			}
		})
	}
}
