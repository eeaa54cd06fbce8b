package config

import (
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// Defaults, and every unreadable knob named at once.
func TestLoad(t *testing.T) {
	c, err := Load(env(map[string]string{"PG_HOST": "db"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Flush != 10*time.Second || c.Bind != "127.0.0.1:8792" || c.KVNamespace != "gate" || !c.History.Enabled() || c.History.Port != 5432 {
		t.Fatalf("defaults %+v", c)
	}
	_, err = Load(env(map[string]string{"GATE_RECORDER_FLUSH_MS": "soon", "GATE_RECORDER_BIND": "nowhere", "PG_PORT": "x"}))
	for _, k := range []string{"GATE_RECORDER_FLUSH_MS=", "GATE_RECORDER_BIND=", "PG_PORT="} {
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("error %v does not name %s", err, k)
		}
	}
	if c, _ := Load(env(map[string]string{"GATE_RECORDER_FLUSH_MS": "5"})); c.Flush != time.Second {
		t.Errorf("flush 5 ms clamps to %v, want 1s", c.Flush)
	}
}
