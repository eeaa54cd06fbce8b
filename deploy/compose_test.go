package deploy

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// loadCompose loads ../compose.yaml as `docker compose up` would, with env
// as the shell's environment.
func loadCompose(t *testing.T, env map[string]string) *types.Project {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(filepath.Join(root, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  root,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(root, "compose.yaml"), Content: body}},
		Environment: env,
	})
	if err != nil {
		t.Fatalf("compose.yaml does not load: %v", err)
	}
	return p
}

// gateBinary is the Gate binary a service builds (its BINARY build arg), or
// "" for a service that runs somebody else's image.
func gateBinary(s types.ServiceConfig) string {
	if s.Build == nil {
		return ""
	}
	if v := s.Build.Args["BINARY"]; v != nil {
		return *v
	}
	return "gate-api" // the Dockerfile's default
}

func envOf(s types.ServiceConfig) map[string]string {
	out := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

// TestComposeStack: every service the README promises is there, each Gate
// service builds from the one Dockerfile with a BINARY the build accepts,
// every image is pinned, and each env var a Gate service sets is a knob
// its binary reads and parses (its loader accepts the interpolated value).
func TestComposeStack(t *testing.T) {
	p := loadCompose(t, map[string]string{})
	knobs := knobsRead(t)
	for _, want := range []string{"postgres", "queen", "nats", "broker-ready", "gate-api", "gate-relay", "gate-recorder", "gate-console"} {
		if _, err := p.GetService(want); err != nil {
			t.Errorf("compose.yaml has no service %s", want)
		}
	}
	for name, s := range p.Services {
		bin := gateBinary(s)
		if bin == "" {
			if s.Image == "" {
				t.Errorf("%s: neither image nor build", name)
				continue
			}
			repo, tag, ok := strings.Cut(s.Image[strings.LastIndex(s.Image, "/")+1:], ":")
			if !ok || tag == "" || tag == "latest" {
				t.Errorf("%s: image %s is not pinned to a version (repo %s)", name, s.Image, repo)
			}
			continue
		}
		if _, ok := loaders[bin]; !ok {
			t.Errorf("%s: BINARY=%s is not a Gate binary the Dockerfile builds", name, bin)
			continue
		}
		if s.Build.Context != p.WorkingDir || filepath.Base(s.Build.Dockerfile) != "Dockerfile" {
			t.Errorf("%s: build %s/%s, want the workspace root and its Dockerfile", name, s.Build.Context, s.Build.Dockerfile)
		}
		env := envOf(s)
		for k := range env {
			if !knobs[bin][k] {
				t.Errorf("%s sets %s, which %s never reads (it reads %v)", name, k, bin, sorted(knobs[bin]))
			}
		}
		if name == "broker-ready" {
			continue
		}
		if err := loaders[bin](func(k string) string { return env[k] }); err != nil {
			t.Errorf("%s: %s refuses the environment compose gives it: %v", name, bin, err)
		}
	}
	q, _ := p.GetService("queen")
	if v := envOf(q)["QUEEN_KV_ENABLED"]; v != "true" {
		t.Errorf("queen: QUEEN_KV_ENABLED=%q, want true (1.0.4 gates kv behind it)", v)
	}
	pg, _ := p.GetService("postgres")
	if !strings.HasPrefix(pg.Image, "postgres:18") || len(pg.Volumes) == 0 || pg.Volumes[0].Type != types.VolumeTypeVolume {
		t.Errorf("postgres: image %s, volumes %+v; want postgres:18 on a named volume", pg.Image, pg.Volumes)
	}
	relay, _ := p.GetService("gate-relay")
	if relay.Deploy == nil || relay.Deploy.Replicas == nil || *relay.Deploy.Replicas != 2 {
		t.Errorf("gate-relay: want two replicas (deploy.replicas: 2)")
	}
}

// TestComposePortsAndHealth: the published ports are the README's, each
// Gate service's health check probes its own bind port, and the console
// with the dev bypass is published on loopback only.
func TestComposePortsAndHealth(t *testing.T) {
	p := loadCompose(t, map[string]string{})
	published := map[string][]string{
		"queen":         {"6632:6632"},
		"nats":          {"4222:4222"},
		"gate-api":      {"8788:8788"},
		"gate-relay":    {"8791-8792:8791"},
		"gate-recorder": {"8793:8792"},
		"gate-console":  {"127.0.0.1:8790:8790"},
	}
	for name, want := range published {
		s, err := p.GetService(name)
		if err != nil {
			t.Errorf("no service %s", name)
			continue
		}
		var got []string
		for _, pc := range s.Ports {
			v := pc.Published + ":" + strconv.FormatUint(uint64(pc.Target), 10)
			if pc.HostIP != "" {
				v = pc.HostIP + ":" + v
			}
			got = append(got, v)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s publishes %v, want %v", name, got, want)
		}
	}
	binds := map[string]string{"gate-api": "GATE_BIND", "gate-relay": "GATE_RELAY_BIND", "gate-recorder": "GATE_RECORDER_BIND", "gate-console": "GATE_PUBLIC_BIND"}
	for name, knob := range binds {
		s, _ := p.GetService(name)
		_, port, err := net.SplitHostPort(envOf(s)[knob])
		if err != nil {
			t.Errorf("%s: %s=%q is not host:port", name, knob, envOf(s)[knob])
			continue
		}
		if s.HealthCheck == nil || len(s.HealthCheck.Test) != 3 || s.HealthCheck.Test[0] != "CMD" || s.HealthCheck.Test[1] != "/usr/local/bin/gate-probe" {
			t.Errorf("%s: health check %+v, want [CMD /usr/local/bin/gate-probe URL]", name, s.HealthCheck)
			continue
		}
		u, err := url.Parse(s.HealthCheck.Test[2])
		if err != nil || u.Port() != port || u.Path != "/health" {
			t.Errorf("%s: health check probes %s, want /health on its bind port %s", name, s.HealthCheck.Test[2], port)
		}
	}
	pg, _ := p.GetService("postgres")
	if pg.HealthCheck == nil || len(pg.HealthCheck.Test) == 0 {
		t.Errorf("postgres has no health check")
	}
}

// TestComposeDependencies: every Gate service waits for the brokers
// (broker-ready completed), for PostgreSQL healthy when it uses history,
// and a service_healthy condition only names a service with a health
// check.
func TestComposeDependencies(t *testing.T) {
	p := loadCompose(t, map[string]string{})
	for name, s := range p.Services {
		for dep, d := range s.DependsOn {
			ds, err := p.GetService(dep)
			if err != nil {
				t.Errorf("%s depends on %s, which does not exist", name, dep)
				continue
			}
			if d.Condition == types.ServiceConditionHealthy && ds.HealthCheck == nil {
				t.Errorf("%s waits for %s healthy, which has no health check", name, dep)
			}
		}
		if gateBinary(s) == "" || name == "broker-ready" {
			continue
		}
		if !reaches(p, name, "broker-ready", types.ServiceConditionCompletedSuccessfully) {
			t.Errorf("%s does not wait (directly or through gate-api) for broker-ready to complete", name)
		}
		if envOf(s)["PG_HOST"] != "" {
			if d, ok := s.DependsOn["postgres"]; !ok || d.Condition != types.ServiceConditionHealthy {
				if !reaches(p, name, "postgres", types.ServiceConditionHealthy) {
					t.Errorf("%s uses PG_HOST but does not wait for postgres healthy", name)
				}
			}
		}
	}
	rd, _ := p.GetService("broker-ready")
	if !slices.Contains(rd.Entrypoint, "http://queen:6632/health") {
		t.Errorf("broker-ready does not wait for Queen's /health: %v", rd.Entrypoint)
	}
}

// reaches reports whether from depends, directly or through other
// services, on to with condition cond.
func reaches(p *types.Project, from, to, cond string) bool {
	seen := map[string]bool{}
	var walk func(string) bool
	walk = func(n string) bool {
		if seen[n] {
			return false
		}
		seen[n] = true
		s, err := p.GetService(n)
		if err != nil {
			return false
		}
		for dep, d := range s.DependsOn {
			if dep == to && d.Condition == cond {
				return true
			}
			if walk(dep) {
				return true
			}
		}
		return false
	}
	return walk(from)
}

// TestComposeGoogleSignIn: with the sign-in variables in the shell and the
// bypass emptied, the console gets them and its loader accepts them.
func TestComposeGoogleSignIn(t *testing.T) {
	p := loadCompose(t, map[string]string{
		"GATE_DEV_EMAIL": "", "GOOGLE_CLIENT_ID": "id.apps.googleusercontent.com", "GOOGLE_CLIENT_SECRET": "s",
		"GOOGLE_ALLOWED_DOMAINS": "example.com", "GATE_SESSION_SECRET": "q3Vb7N0xKpZt2LmWc9RfYd4HsE8uJa1GxT5n",
	})
	s, _ := p.GetService("gate-console")
	env := envOf(s)
	if env["GATE_DEV_EMAIL"] != "" || env["GOOGLE_CLIENT_ID"] != "id.apps.googleusercontent.com" {
		t.Fatalf("console env %v", env)
	}
	if err := loaders["gate-console"](func(k string) string { return env[k] }); err != nil {
		t.Errorf("the console refuses Google sign-in from compose: %v", err)
	}
}
