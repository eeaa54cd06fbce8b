package config

import (
	"strings"
	"testing"
	"time"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		env   map[string]string
		check func(Config) bool
		err   string
	}{
		{"defaults", nil, func(c Config) bool {
			return c == Default() && c.Bind == "0.0.0.0:8788" && c.KVNamespace == "gate" && c.MaxPushBodyBytes == 8<<20 && c.BodyBytes == 2<<20
		}, ""},
		{"push limit clamped up", map[string]string{"GATE_MAX_PUSH_BODY_BYTES": "1"}, func(c Config) bool { return c.MaxPushBodyBytes == 2<<20 }, ""},
		{"push limit clamped down", map[string]string{"GATE_MAX_PUSH_BODY_BYTES": "999999999999"}, func(c Config) bool { return c.MaxPushBodyBytes == 64<<20 }, ""},
		{"batch clamped", map[string]string{"GATE_STAGE_BATCH": "5000"}, func(c Config) bool { return c.StageBatch == 1000 }, ""},
		{"push batch default", nil, func(c Config) bool { return c.PushBatch == 64 }, ""},
		{"push batch off", map[string]string{"GATE_PUSH_BATCH": "1"}, func(c Config) bool { return c.PushBatch == 1 }, ""},
		{"push batch clamped", map[string]string{"GATE_PUSH_BATCH": "0"}, func(c Config) bool { return c.PushBatch == 1 }, ""},
		{"push batch capped", map[string]string{"GATE_PUSH_BATCH": "100000"}, func(c Config) bool { return c.PushBatch == 1000 }, ""},
		{"push batch unreadable", map[string]string{"GATE_PUSH_BATCH": "many"}, nil, "GATE_PUSH_BATCH=\"many\" is not a whole number"},
		{"item records off", map[string]string{"GATE_ITEM_RECORD_SECONDS": "0"}, func(c Config) bool { return c.ItemRecordSeconds == 0 }, ""},
		{"item records default a day", map[string]string{}, func(c Config) bool { return c.ItemRecordSeconds == 86400 }, ""},
		{"lease at least 1", map[string]string{"GATE_LEASE_SECONDS": "0"}, func(c Config) bool { return c.LeaseSeconds == 1 }, ""},
		{"refresh", map[string]string{"GATE_API_REFRESH_MS": "250"}, func(c Config) bool { return c.Refresh == 250*time.Millisecond }, ""},
		{"declare wait default", nil, func(c Config) bool { return c.DeclareWait == 5*time.Second }, ""},
		{"declare wait off", map[string]string{"GATE_DECLARE_WAIT_MS": "0"}, func(c Config) bool { return c.DeclareWait == 0 }, ""},
		{"declare wait set", map[string]string{"GATE_DECLARE_WAIT_MS": "750"}, func(c Config) bool { return c.DeclareWait == 750*time.Millisecond }, ""},
		{"declare wait clamped down", map[string]string{"GATE_DECLARE_WAIT_MS": "600000"}, func(c Config) bool { return c.DeclareWait == time.Minute }, ""},
		{"declare wait clamped up", map[string]string{"GATE_DECLARE_WAIT_MS": "-5"}, func(c Config) bool { return c.DeclareWait == 0 }, ""},
		{"declare wait unreadable", map[string]string{"GATE_DECLARE_WAIT_MS": "5s"}, nil, "GATE_DECLARE_WAIT_MS=\"5s\" is not a whole number"},
		{"everything set", map[string]string{"QUEEN_URL": "https://q.example:6632", "GATE_BIND": "127.0.0.1:9000", "GATE_KV_NAMESPACE": "gate-prod", "GATE_STAGE_CONCURRENCY": "4", "GATE_RETRY_LIMIT": "5", "GATE_LOG_LEVEL": "debug"},
			func(c Config) bool {
				return c.QueenURL == "https://q.example:6632" && c.Bind == "127.0.0.1:9000" && c.KVNamespace == "gate-prod" && c.StageConcurrency == 4 && c.RetryLimit == 5 && c.LogLevel == "debug"
			}, ""},
		{"unparseable number", map[string]string{"GATE_STAGE_BATCH": "lots"}, nil, "GATE_STAGE_BATCH=\"lots\" is not a whole number"},
		{"negative retry limit clamped", map[string]string{"GATE_RETRY_LIMIT": "-1"}, func(c Config) bool { return c.RetryLimit == 0 }, ""},
		{"lease capped as the relay caps it", map[string]string{"GATE_LEASE_SECONDS": "86400"}, func(c Config) bool { return c.LeaseSeconds == 3600 }, ""},
		{"log level in any case", map[string]string{"GATE_LOG_LEVEL": "WARN"}, func(c Config) bool { return c.LogLevel == "warn" }, ""},
		{"bad broker URL", map[string]string{"QUEEN_URL": "localhost:6632"}, nil, "QUEEN_URL"},
		{"bad bind", map[string]string{"GATE_BIND": "8788"}, nil, "GATE_BIND"},
		{"bad namespace", map[string]string{"GATE_KV_NAMESPACE": "Gate"}, nil, "GATE_KV_NAMESPACE"},
		{"bad log level", map[string]string{"GATE_LOG_LEVEL": "loud"}, nil, "GATE_LOG_LEVEL"},
		{"several problems at once", map[string]string{"GATE_LANE_CAPACITY": "x", "GATE_RECONCILE_SECONDS": "y"}, nil, "GATE_RECONCILE_SECONDS"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Load(func(k string) string { return c.env[k] })
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !c.check(cfg) {
				t.Fatalf("config %+v", cfg)
			}
		})
	}
}
