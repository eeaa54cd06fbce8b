package config_test

import (
	"strings"
	"testing"

	"github.com/queen-mq/gate/gate-console/config"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// secret is a session secret as $(openssl rand -base64 24) writes one.
const secret = "q3Vb7N0xKpZt2LmWc9RfYd4HsE8uJa1G"

// TestBootRefusals: every refusal of gate-runtime.md §4.1 stops the boot
// with one line naming the knob and the fix.
func TestBootRefusals(t *testing.T) {
	signIn := map[string]string{"GOOGLE_CLIENT_ID": "id", "GOOGLE_CLIENT_SECRET": "s", "GOOGLE_ALLOWED_DOMAINS": "example.com", "GATE_SESSION_SECRET": secret}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(out, kv[i])
			} else {
				out[kv[i]] = kv[i+1]
			}
		}
		return out
	}
	cases := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"dev bypass on https", map[string]string{"GATE_DEV_EMAIL": "dev@example.com", "GATE_PUBLIC_URL": "https://gate.example.com"}, []string{"GATE_DEV_EMAIL", "https", "unset GATE_DEV_EMAIL"}},
		{"no sign-in, no dev email", map[string]string{}, []string{"GOOGLE_CLIENT_ID", "GATE_DEV_EMAIL", "set"}},
		{"client id without secret", with(signIn, "GOOGLE_CLIENT_SECRET", ""), []string{"GOOGLE_CLIENT_ID is set without GOOGLE_CLIENT_SECRET", "set GOOGLE_CLIENT_SECRET"}},
		{"empty allowed domains", with(signIn, "GOOGLE_ALLOWED_DOMAINS", " , "), []string{"GOOGLE_ALLOWED_DOMAINS is empty", "set it to"}},
		{"session secret missing", with(signIn, "GATE_SESSION_SECRET", ""), []string{"GATE_SESSION_SECRET is missing", "at least 32"}},
		{"session secret short", with(signIn, "GATE_SESSION_SECRET", "0123456789abcdef0123456789abcde"), []string{"GATE_SESSION_SECRET is 31 bytes, shorter than 32", "openssl rand"}},
		{"session secret of 32 spaces", with(signIn, "GATE_SESSION_SECRET", strings.Repeat(" ", 32)), []string{"GATE_SESSION_SECRET has too little entropy (about 0 bits", "openssl rand"}},
		{"session secret of one character", with(signIn, "GATE_SESSION_SECRET", strings.Repeat("k", 40)), []string{"GATE_SESSION_SECRET has too little entropy", "random bytes"}},
		{"session secret of a short pattern", with(signIn, "GATE_SESSION_SECRET", "0123456789abcdef0123456789abcdef"), []string{"GATE_SESSION_SECRET has too little entropy (about 64 bits", "random bytes"}},
		{"session secret of a repeated word", with(signIn, "GATE_SESSION_SECRET", "changeme-changeme-changeme-changeme"), []string{"GATE_SESSION_SECRET has too little entropy", "random bytes"}},
		{"public URL with a path", with(signIn, "GATE_PUBLIC_URL", "https://gate.example.com/console"), []string{"GATE_PUBLIC_URL", "no path"}},
		{"bad public bind", with(signIn, "GATE_PUBLIC_BIND", "8790"), []string{"GATE_PUBLIC_BIND", "host:port"}},
		{"bad dev email", map[string]string{"GATE_DEV_EMAIL": "not an address"}, []string{"GATE_DEV_EMAIL", "e-mail address"}},
		{"bad NATS URL", with(signIn, "GATE_NATS_URL", "http://127.0.0.1:4222"), []string{"GATE_NATS_URL", "nats://"}},
		{"issuer not https", with(signIn, "GATE_OIDC_ISSUER", "http://idp.example.com"), []string{"GATE_OIDC_ISSUER", "https"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Load(env(c.env))
			if err == nil {
				t.Fatalf("Load accepted %v", c.env)
			}
			var line string
			for _, l := range strings.Split(err.Error(), "\n") {
				if strings.Contains(l, c.want[0]) {
					line = l
				}
			}
			if line == "" {
				t.Fatalf("no line names %q in:\n%v", c.want[0], err)
			}
			for _, w := range c.want[1:] {
				if !strings.Contains(line, w) {
					t.Errorf("refusal %q does not say %q", line, w)
				}
			}
		})
	}
}

func TestBootAccepts(t *testing.T) {
	c, err := config.Load(env(map[string]string{"GATE_DEV_EMAIL": "Dev@Example.com"}))
	if err != nil {
		t.Fatalf("dev bypass on the default http URL refused: %v", err)
	}
	if c.DevEmail != "dev@example.com" || c.PublicBind != "0.0.0.0:8790" || c.HTTPS() {
		t.Errorf("dev config = %+v", c)
	}
	c, err = config.Load(env(map[string]string{"GOOGLE_CLIENT_ID": "id", "GOOGLE_CLIENT_SECRET": "s", "GOOGLE_ALLOWED_DOMAINS": "Example.com, example.org", "GATE_SESSION_SECRET": secret, "GATE_PUBLIC_URL": "https://gate.example.com/"}))
	if err != nil {
		t.Fatalf("sign-in config refused: %v", err)
	}
	if c.RedirectURL() != "https://gate.example.com/api/auth/google/callback" || len(c.AllowedDomains) != 2 || c.AllowedDomains[0] != "example.com" || c.Issuer != "https://accounts.google.com" {
		t.Errorf("sign-in config = %+v, redirect %s", c, c.RedirectURL())
	}
}
