package knob

import (
	"strings"
	"testing"
)

// No PG_HOST and no PG_URL is "no history"; the defaults fill the rest.
func TestHistoryUnsetIsOff(t *testing.T) {
	t.Parallel()
	h, err := ReadHistory(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if h.Enabled() || h.ConnString() != "" {
		t.Fatalf("unset history reads as enabled: %+v", h)
	}
	if h.Port != 5432 || h.User != "postgres" || h.Database != "postgres" || h.Schema != "gate" {
		t.Fatalf("defaults %+v, want 5432 postgres postgres gate", h)
	}
}

// The five knobs build one connection string; PG_URL wins and is what a
// startup error names.
func TestHistoryConnString(t *testing.T) {
	t.Parallel()
	h, err := ReadHistory(env(map[string]string{"PG_HOST": "db.internal", "PG_PORT": "6543", "PG_USER": "gate", "PG_PASSWORD": "p@ss word", "PG_DATABASE": "hist"}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := h.ConnString(), "postgres://gate:p%40ss%20word@db.internal:6543/hist"; got != want {
		t.Fatalf("conn string %q, want %q", got, want)
	}
	if h.Knob() != "PG_HOST" || strings.Contains(h.Describe(), "p@ss") {
		t.Fatalf("knob %q describe %q: must name PG_HOST and hide the password", h.Knob(), h.Describe())
	}
	u, err := ReadHistory(env(map[string]string{"PG_HOST": "ignored", "PG_URL": "postgres://u:secret@h:1/d"}))
	if err != nil {
		t.Fatal(err)
	}
	if u.ConnString() != "postgres://u:secret@h:1/d" || u.Knob() != "PG_URL" || strings.Contains(u.Describe(), "secret") {
		t.Fatalf("PG_URL: conn %q knob %q describe %q", u.ConnString(), u.Knob(), u.Describe())
	}
}

// A value that cannot be right is a startup error naming the knob.
func TestHistoryRefusals(t *testing.T) {
	t.Parallel()
	for name, e := range map[string]map[string]string{
		"PG_PORT":             {"PG_HOST": "h", "PG_PORT": "five"},
		"PG_URL":              {"PG_URL": "mysql://h/d"},
		"PG_HOST":             {"PG_HOST": "user@host"},
		"GATE_HISTORY_SCHEMA": {"PG_HOST": "h", "GATE_HISTORY_SCHEMA": "1bad;drop"},
	} {
		_, err := ReadHistory(env(e))
		if err == nil || !strings.Contains(err.Error(), name+"=") {
			t.Errorf("%v: error %v, want one naming %s", e, err, name)
		}
	}
}
