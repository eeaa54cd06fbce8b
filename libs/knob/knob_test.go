package knob

import (
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// Every number knob (the shared ones and gate-relay's timing knobs):
// default when unset or blank, the value in
// range, clamped at both ends, and an unparseable value is an error naming
// the knob and the range.
func TestIntKnobs(t *testing.T) {
	t.Parallel()
	knobs := []struct {
		k                Int
		def, lo, hi, mid int
		belowLo, aboveHi string
	}{
		{StageBatch, 200, 1, 1000, 500, "0", "5000"},
		{StageConcurrency, 0, 0, 4096, 4, "-3", "100000"},
		{LaneCapacity, 1000, 1, 1 << 30, 250, "0", "99999999999"},
		{LeaseSeconds, 10, 1, 3600, 30, "0", "86400"},
		{RetryLimit, 3, 0, 1000, 5, "-1", "1001"},
		{ReconcileSeconds, 15, 1, 86400, 60, "0", "999999"},
		{StageLingerMs, 5, 0, 100, 20, "-1", "101"},
		{ShadowKeysPerSecond, 1000, 1, 100000, 50, "0", "100001"},
		{PollTimeoutSeconds, 30, 1, 300, 60, "0", "301"},
		{MaxParkMs, 30000, 0, 3600000, 250, "-1", "3600001"},
		{InteriorSeedSkewSeconds, 120, 0, 600, 60, "-1", "9999"},
		{SignalPollMs, 500, 50, 60000, 100, "10", "60001"},
		{StatusSeconds, 5, 1, 300, 1, "0", "301"},
	}
	for _, kc := range knobs {
		cases := []struct {
			name, value string
			want        int
			err         bool
		}{
			{"unset", "", kc.def, false},
			{"blank", "  ", kc.def, false},
			{"in range", strconv.Itoa(kc.mid), kc.mid, false},
			{"padded", " " + strconv.Itoa(kc.mid) + "\t", kc.mid, false},
			{"low end", strconv.Itoa(kc.lo), kc.lo, false},
			{"high end", strconv.Itoa(kc.hi), kc.hi, false},
			{"clamped low", kc.belowLo, kc.lo, false},
			{"clamped high", kc.aboveHi, kc.hi, false},
			{"beyond int64", "99999999999999999999999", kc.hi, false},
			{"beyond int64 negative", "-99999999999999999999999", kc.lo, false},
			{"unparseable", "ten", kc.def, true},
			{"fraction", "1.5", kc.def, true},
		}
		for _, c := range cases {
			t.Run(kc.k.Name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				if kc.k.Default != kc.def || kc.k.Min != kc.lo || kc.k.Max != kc.hi {
					t.Fatalf("%s is defined as default %d range %d..%d, documented %d %d..%d", kc.k.Name, kc.k.Default, kc.k.Min, kc.k.Max, kc.def, kc.lo, kc.hi)
				}
				got, err := kc.k.Read(env(map[string]string{kc.k.Name: c.value}))
				if c.err {
					if err == nil || !strings.Contains(err.Error(), kc.k.Name+"=") || !strings.Contains(err.Error(), strconv.Itoa(kc.lo)+".."+strconv.Itoa(kc.hi)) {
						t.Fatalf("%s=%q: error %v, want one naming the knob and its range", kc.k.Name, c.value, err)
					}
				} else if err != nil {
					t.Fatalf("%s=%q: %v", kc.k.Name, c.value, err)
				}
				if got != c.want {
					t.Fatalf("%s=%q read %d, want %d", kc.k.Name, c.value, got, c.want)
				}
			})
		}
	}
}

// Every shared string knob: default, a good value, normalisation, and a bad
// value refused with an error naming the knob.
func TestTextKnobs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		k           Text
		value, want string
		err         bool
	}{
		{QueenURL, "", "http://localhost:6632", false},
		{QueenURL, " https://q.example:6632 ", "https://q.example:6632", false},
		{QueenURL, "localhost:6632", "http://localhost:6632", true},
		{QueenURL, "ftp://q.example", "http://localhost:6632", true},
		{KVNamespace, "", "gate", false},
		{KVNamespace, "gate-prod", "gate-prod", false},
		{KVNamespace, "Gate", "gate", true},
		{KVNamespace, "-gate", "gate", true},
		{LogLevel, "", "info", false},
		{LogLevel, "debug", "debug", false},
		{LogLevel, "WARN", "warn", false},
		{LogLevel, "Error", "error", false},
		{LogLevel, "loud", "info", true},
	}
	for _, c := range cases {
		t.Run(c.k.Name+"/"+c.value, func(t *testing.T) {
			t.Parallel()
			got, err := c.k.Read(env(map[string]string{c.k.Name: c.value}))
			if c.err {
				if err == nil || !strings.Contains(err.Error(), c.k.Name+"=") {
					t.Fatalf("%s=%q: error %v, want one naming the knob", c.k.Name, c.value, err)
				}
			} else if err != nil {
				t.Fatalf("%s=%q: %v", c.k.Name, c.value, err)
			}
			if got != c.want {
				t.Fatalf("%s=%q read %q, want %q", c.k.Name, c.value, got, c.want)
			}
		})
	}
}

func TestReadShared(t *testing.T) {
	t.Parallel()
	s, err := ReadShared(env(nil))
	if err != nil || s != DefaultShared() {
		t.Fatalf("empty environment: %+v %v", s, err)
	}
	want := Shared{QueenURL: "http://q:1", KVNamespace: "ns", LogLevel: "debug", StageBatch: 1000, StageConcurrency: 0,
		LaneCapacity: 7, LeaseSeconds: 3600, RetryLimit: 0, ReconcileSeconds: 1}
	s, err = ReadShared(env(map[string]string{
		"QUEEN_URL": "http://q:1", "GATE_KV_NAMESPACE": "ns", "GATE_LOG_LEVEL": "DEBUG", "GATE_STAGE_BATCH": "2000",
		"GATE_STAGE_CONCURRENCY": "-1", "GATE_LANE_CAPACITY": "7", "GATE_LEASE_SECONDS": "7200", "GATE_RETRY_LIMIT": "-4",
		"GATE_RECONCILE_SECONDS": "0",
	}))
	if err != nil || s != want {
		t.Fatalf("read %+v (%v), want %+v", s, err, want)
	}
	// Every unreadable knob is reported at once, and keeps its default.
	s, err = ReadShared(env(map[string]string{"GATE_LANE_CAPACITY": "x", "GATE_LEASE_SECONDS": "ten", "QUEEN_URL": "nope"}))
	for _, name := range []string{"GATE_LANE_CAPACITY", "GATE_LEASE_SECONDS", "QUEEN_URL"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("error %v must name %s", err, name)
		}
	}
	if s.LaneCapacity != 1000 || s.LeaseSeconds != 10 || s.QueenURL != DefaultQueenURL {
		t.Fatalf("failed knobs must keep their defaults: %+v", s)
	}
}

func TestParseLogLevel(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want slog.Level
		err  bool
	}{
		{"", slog.LevelInfo, false},
		{"debug", slog.LevelDebug, false},
		{"INFO", slog.LevelInfo, false},
		{" Warn ", slog.LevelWarn, false},
		{"error", slog.LevelError, false},
		{"trace", slog.LevelInfo, true},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseLogLevel(c.in)
			if (err != nil) != c.err || got != c.want {
				t.Fatalf("ParseLogLevel(%q) = %v, %v", c.in, got, err)
			}
			if c.err && !strings.Contains(err.Error(), "GATE_LOG_LEVEL") {
				t.Fatalf("error %v must name GATE_LOG_LEVEL", err)
			}
		})
	}
}

// A session secret made the documented ways (openssl rand -hex 16 at the
// shortest, -base64 48 as the README says) always estimates above the
// bar; blanks, one character and short patterns repeated never do.
func TestSecretBitsSeparatesRandomSecretsFromPlaceholders(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, 48)
		for i := range b {
			b[i] = byte(rnd.UintN(256))
		}
		if hx := hex.EncodeToString(b[:16]); SecretBits(hx) < MinSessionSecretBits {
			t.Fatalf("the random hex secret %s estimates %.1f bits, under %d", hx, SecretBits(hx), MinSessionSecretBits)
		}
		if b64 := base64.StdEncoding.EncodeToString(b); SecretBits(b64) < MinSessionSecretBits {
			t.Fatalf("the random base64 secret %s estimates %.1f bits, under %d", b64, SecretBits(b64), MinSessionSecretBits)
		}
	}
	for _, weak := range []string{strings.Repeat(" ", 32), strings.Repeat("k", 64), strings.Repeat("ab", 40),
		"0123456789abcdef0123456789abcdef", strings.Repeat("changeme-", 8), strings.Repeat("\t ", 20)} {
		if bits := SecretBits(weak); bits >= MinSessionSecretBits {
			t.Errorf("the placeholder %q estimates %.1f bits, at or over %d", weak, bits, MinSessionSecretBits)
		}
	}
}
