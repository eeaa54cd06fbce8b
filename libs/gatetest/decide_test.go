package gatetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestDecideChoosesEverySourceByPreference(t *testing.T) {
	t.Parallel()
	refused := errors.New("connection refused")
	cases := []struct {
		name       string
		component  Component
		in         Inputs
		wantSource Source
		wantURL    string
		// wantReason lists substrings the reason must contain.
		wantReason []string
	}{
		// Broker: env, then container, then embedded miniqueen; never unavailable
		// unless an explicit URL is dead.
		{"broker env answers", ComponentBroker, Inputs{EnvURL: "http://q:6632", DockerAnswers: true}, SourceEnv, "http://q:6632", []string{EnvQueenURL}},
		{"broker env dead skips", ComponentBroker, Inputs{EnvURL: "http://q:6632", EnvErr: refused, DockerAnswers: true}, SourceSkip, "", []string{EnvQueenURL + "=http://q:6632", "connection refused", "unset " + EnvQueenURL, EnvRequireLive + "=1"}},
		{"broker env dead fails when required", ComponentBroker, Inputs{EnvURL: "http://q:6632", EnvErr: refused, RequireLive: true}, SourceFail, "", []string{"does not answer", EnvRequireLive + " is set"}},
		{"broker docker", ComponentBroker, Inputs{DockerAnswers: true}, SourceContainer, "", []string{"Docker"}},
		{"broker docker beats required-live fallback", ComponentBroker, Inputs{DockerAnswers: true, RequireLive: true}, SourceContainer, "", nil},
		{"broker ignores a local answer", ComponentBroker, Inputs{LocalAnswers: true}, SourceEmbedded, "", []string{"miniqueen"}},
		{"broker nothing falls back to miniqueen", ComponentBroker, Inputs{}, SourceEmbedded, "", []string{"miniqueen"}},
		{"broker nothing and required still miniqueen", ComponentBroker, Inputs{RequireLive: true}, SourceEmbedded, "", []string{"miniqueen"}},

		// Postgres: env, then local 5432, then container, else unavailable.
		{"postgres env answers", ComponentPostgres, Inputs{EnvURL: "postgres://x/db", LocalAnswers: true, DockerAnswers: true}, SourceEnv, "postgres://x/db", nil},
		{"postgres env dead skips", ComponentPostgres, Inputs{EnvURL: "postgres://x/db", EnvErr: refused, LocalAnswers: true}, SourceSkip, "", []string{EnvPostgresURL + "=postgres://x/db"}},
		{"postgres env dead fails when required", ComponentPostgres, Inputs{EnvURL: "postgres://x/db", EnvErr: refused, RequireLive: true}, SourceFail, "", []string{EnvPostgresURL}},
		{"postgres env password is redacted", ComponentPostgres, Inputs{EnvURL: "postgres://u:secret@x/db", EnvErr: refused}, SourceSkip, "", []string{"postgres://u:xxxxx@x/db"}},
		{"postgres local beats docker", ComponentPostgres, Inputs{LocalAnswers: true, DockerAnswers: true}, SourceLocal, LocalPostgresURL, []string{"5432"}},
		{"postgres docker", ComponentPostgres, Inputs{DockerAnswers: true}, SourceContainer, "", []string{"postgres:18"}},
		{"postgres nothing skips", ComponentPostgres, Inputs{}, SourceSkip, "", []string{"no PostgreSQL", EnvPostgresURL, "127.0.0.1:5432", "Docker", EnvRequireLive + "=1"}},
		{"postgres nothing fails when required", ComponentPostgres, Inputs{RequireLive: true}, SourceFail, "", []string{"no PostgreSQL", EnvPostgresURL, EnvRequireLive + " is set"}},

		// NATS: env, then local 4222, then embedded; Docker is never used.
		{"nats env answers", ComponentNATS, Inputs{EnvURL: "nats://n:4222", LocalAnswers: true}, SourceEnv, "nats://n:4222", nil},
		{"nats env dead skips", ComponentNATS, Inputs{EnvURL: "nats://n:4222", EnvErr: refused}, SourceSkip, "", []string{EnvNATSURL + "=nats://n:4222"}},
		{"nats env dead fails when required", ComponentNATS, Inputs{EnvURL: "nats://n:4222", EnvErr: refused, RequireLive: true}, SourceFail, "", []string{EnvNATSURL}},
		{"nats local", ComponentNATS, Inputs{LocalAnswers: true, DockerAnswers: true}, SourceLocal, LocalNATSURL, []string{"4222"}},
		{"nats nothing embeds", ComponentNATS, Inputs{DockerAnswers: true}, SourceEmbedded, "", []string{"embedded nats-server"}},
		{"nats nothing and required still embeds", ComponentNATS, Inputs{RequireLive: true}, SourceEmbedded, "", nil},

		// Defensive branch.
		{"unknown component skips", Component("redis"), Inputs{}, SourceSkip, "", []string{`unknown component "redis"`}},
		{"unknown component fails when required", Component("redis"), Inputs{RequireLive: true}, SourceFail, "", []string{"unknown component"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Decide(tc.component, tc.in)
			if got.Source != tc.wantSource || got.URL != tc.wantURL {
				t.Fatalf("Decide(%s, %+v) = {%s %q}, want {%s %q} (reason %q)", tc.component, tc.in, got.Source, got.URL, tc.wantSource, tc.wantURL, got.Reason)
			}
			if got.Reason == "" {
				t.Errorf("Decide gave no reason for %s", got.Source)
			}
			if strings.Contains(got.Reason, "secret") {
				t.Errorf("reason %q leaks a password", got.Reason)
			}
			for _, sub := range tc.wantReason {
				if !strings.Contains(got.Reason, sub) {
					t.Errorf("reason %q does not mention %q", got.Reason, sub)
				}
			}
		})
	}
}

func TestTruthyReadsRequireLiveValues(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{
		"": false, "0": false, "false": false, "FALSE": false, "no": false, "off": false, " ": false,
		"1": true, "true": true, "yes": true, "on": true, "required": true,
	} {
		if got := truthy(v); got != want {
			t.Errorf("truthy(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestRequireLiveFollowsTheEnvironment(t *testing.T) {
	t.Setenv(EnvRequireLive, "1")
	if !RequireLive() {
		t.Errorf("RequireLive() = false with %s=1", EnvRequireLive)
	}
	t.Setenv(EnvRequireLive, "0")
	if RequireLive() {
		t.Errorf("RequireLive() = true with %s=0", EnvRequireLive)
	}
}

func TestNamesAreValidAndUniquePerTest(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"TestSemantic07_LeaseExpiry", "testsemantic07-leaseexpi"},
		{"Test/sub case/ÄÖ", "test-sub-case"},
		{"---", "t"},
		{"A__B", "a-b"},
	}
	for _, tc := range cases {
		if got := sanitise(tc.in, '-'); got != tc.want {
			t.Errorf("sanitise(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	a, b := Prefix(t), Prefix(t)
	if a == b {
		t.Fatalf("two prefixes for one test are equal: %q", a)
	}
	for _, p := range []string{a, b, schemaName(t)} {
		if len(p) > 40 {
			t.Errorf("prefix %q is %d bytes, want ≤ 40", p, len(p))
		}
		for i := 0; i < len(p); i++ {
			c := p[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				t.Errorf("prefix %q has byte %q outside [a-z0-9_-]", p, c)
			}
		}
	}
}

func TestEventuallyPollsUntilTrue(t *testing.T) {
	t.Parallel()
	calls := 0
	Eventually(t, 5e9, func() bool { calls++; return calls == 4 })
	if calls != 4 {
		t.Fatalf("fn called %d times, want 4", calls)
	}
	calls = 0
	EventuallyErr(t, 5e9, func() error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if calls != 3 {
		t.Fatalf("fn called %d times, want 3", calls)
	}
}

func TestPollGivesUpAtTheTimeout(t *testing.T) {
	t.Parallel()
	calls := 0
	if poll(20e6, func() bool { calls++; return false }) {
		t.Fatal("poll reported success for a condition that never holds")
	}
	if calls < 2 {
		t.Fatalf("fn called %d times in 20ms, want it retried", calls)
	}
}

// recorder is a testing.TB that records Fatalf/Skipf instead of ending the
// goroutine, so refuse's choice can be asserted.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Fatalf(f string, a ...any) { r.fatal = fmt.Sprintf(f, a...) }
func (r *recorder) Skipf(f string, a ...any)  { r.skip = fmt.Sprintf(f, a...) }

func TestUnavailableComponentSkipsOrFails(t *testing.T) {
	t.Parallel()
	for _, requireLive := range []bool{false, true} {
		r := &recorder{}
		refuse(r, Decide(ComponentPostgres, Inputs{RequireLive: requireLive}))
		got, other := r.skip, r.fatal
		if requireLive {
			got, other = r.fatal, r.skip
		}
		if got == "" || other != "" {
			t.Errorf("requireLive=%v: fatal=%q skip=%q", requireLive, r.fatal, r.skip)
		}
		if !strings.Contains(got, "no PostgreSQL") || !strings.Contains(got, EnvPostgresURL) {
			t.Errorf("requireLive=%v: message %q does not say what is missing and how to provide it", requireLive, got)
		}
	}
}
