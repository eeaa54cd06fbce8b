package gatetest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Component names one live dependency a Gate test can ask for.
type Component string

// The components the harness provides.
const (
	// ComponentBroker is a Queen-compatible broker.
	ComponentBroker Component = "broker"
	// ComponentPostgres is a PostgreSQL server.
	ComponentPostgres Component = "postgres"
	// ComponentNATS is a NATS server.
	ComponentNATS Component = "nats"
)

// Source says where a component comes from for one test, or that it is
// unavailable.
type Source string

// The sources Decide chooses between.
const (
	// SourceEnv is the URL given in the component's GATE_TEST_*_URL variable.
	SourceEnv Source = "env"
	// SourceLocal is the well-known local port (Postgres 5432, NATS 4222).
	SourceLocal Source = "local"
	// SourceContainer is a container started through testcontainers-go.
	SourceContainer Source = "container"
	// SourceEmbedded is an in-process server (miniqueen, nats-server).
	SourceEmbedded Source = "embedded"
	// SourceSkip means the component is unavailable and the test skips.
	SourceSkip Source = "skip"
	// SourceFail means the component is unavailable and GATE_TEST_REQUIRE_LIVE
	// turns that into a test failure.
	SourceFail Source = "fail"
)

// Environment variables the harness reads.
const (
	// EnvQueenURL names a running broker, e.g. http://127.0.0.1:6632.
	EnvQueenURL = "GATE_TEST_QUEEN_URL"
	// EnvPostgresURL names a PostgreSQL server (postgres:// URL or key=value).
	EnvPostgresURL = "GATE_TEST_PG_URL"
	// EnvNATSURL names a NATS server, e.g. nats://127.0.0.1:4222.
	EnvNATSURL = "GATE_TEST_NATS_URL"
	// EnvRequireLive, when true, turns a missing component into a failure.
	EnvRequireLive = "GATE_TEST_REQUIRE_LIVE"
	// EnvNoDocker, when true, keeps the harness from starting containers.
	EnvNoDocker = "GATE_TEST_NO_DOCKER"
)

// Default local endpoints probed when no URL is configured.
const (
	// LocalPostgresURL is PostgreSQL on its default port, user postgres, trust auth.
	LocalPostgresURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	// LocalNATSURL is NATS on its default port.
	LocalNATSURL = "nats://127.0.0.1:4222"
)

// Inputs is everything Decide looks at: the environment and the probe results.
// The zero value means "nothing configured, nothing answers".
type Inputs struct {
	// EnvURL is the value of the component's GATE_TEST_*_URL variable; empty
	// means unset.
	EnvURL string
	// EnvErr is why EnvURL did not answer; nil means it answered (or is unset).
	EnvErr error
	// RequireLive is true when GATE_TEST_REQUIRE_LIVE is set to a true value.
	RequireLive bool
	// DockerAnswers is true when a Docker engine answered a ping and
	// GATE_TEST_NO_DOCKER is not set.
	DockerAnswers bool
	// LocalAnswers is true when the component's well-known local port answered
	// (Postgres: a query as user postgres; NATS: a connect). Ignored for the
	// broker, which has no well-known local instance.
	LocalAnswers bool
}

// Decision is where a component comes from for one test.
type Decision struct {
	// Source is where the component comes from, or SourceSkip / SourceFail.
	Source Source
	// URL is the address to use for SourceEnv and SourceLocal; empty otherwise.
	URL string
	// Reason explains the choice; for SourceSkip and SourceFail it names what is
	// missing and how to provide it.
	Reason string
}

// Decide chooses where component c comes from, given the environment and probe
// results in in. It has no side effects; see the package documentation for the
// order of preference.
func Decide(c Component, in Inputs) Decision {
	envName := envVarFor(c)
	if in.EnvURL != "" {
		if in.EnvErr == nil {
			return Decision{Source: SourceEnv, URL: in.EnvURL, Reason: envName + " is set"}
		}
		return unavailable(in, fmt.Sprintf("%s=%s does not answer (%v); start it or unset %s", envName, redact(in.EnvURL), in.EnvErr, envName))
	}
	switch c {
	case ComponentBroker:
		if in.DockerAnswers {
			return Decision{Source: SourceContainer, Reason: "Docker answers: Queen runs in a container"}
		}
		return Decision{Source: SourceEmbedded, Reason: "no " + envName + " and no Docker: in-process miniqueen"}
	case ComponentPostgres:
		if in.LocalAnswers {
			return Decision{Source: SourceLocal, URL: LocalPostgresURL, Reason: "PostgreSQL answers on 127.0.0.1:5432"}
		}
		if in.DockerAnswers {
			return Decision{Source: SourceContainer, Reason: "Docker answers: postgres:18 runs in a container"}
		}
		return unavailable(in, "no PostgreSQL: set "+envName+"=postgres://…, run one on 127.0.0.1:5432 (user postgres, trust auth), or start a Docker engine")
	case ComponentNATS:
		if in.LocalAnswers {
			return Decision{Source: SourceLocal, URL: LocalNATSURL, Reason: "NATS answers on 127.0.0.1:4222"}
		}
		return Decision{Source: SourceEmbedded, Reason: "no " + envName + " and nothing on 127.0.0.1:4222: embedded nats-server"}
	default:
		return unavailable(in, fmt.Sprintf("unknown component %q", c))
	}
}

func unavailable(in Inputs, reason string) Decision {
	if in.RequireLive {
		return Decision{Source: SourceFail, Reason: reason + " (" + EnvRequireLive + " is set, so this fails)"}
	}
	return Decision{Source: SourceSkip, Reason: reason + " (set " + EnvRequireLive + "=1 to fail instead of skipping)"}
}

func envVarFor(c Component) string {
	switch c {
	case ComponentBroker:
		return EnvQueenURL
	case ComponentPostgres:
		return EnvPostgresURL
	case ComponentNATS:
		return EnvNATSURL
	}
	return "GATE_TEST_" + strings.ToUpper(string(c)) + "_URL"
}

// truthy reads a boolean-ish environment value: unset, "0", "false", "no" and
// "off" are false; any other non-empty value is true.
func truthy(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" {
		return false
	}
	if b, err := strconv.ParseBool(v); err == nil {
		return b
	}
	switch strings.ToLower(v) {
	case "no", "off":
		return false
	}
	return true
}

// RequireLive reports whether GATE_TEST_REQUIRE_LIVE asks for missing live
// components to fail tests rather than skip them.
func RequireLive() bool { return truthy(os.Getenv(EnvRequireLive)) }
