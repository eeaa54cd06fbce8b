// Package config reads gate-console's knobs and refuses a configuration the
// console must not boot with, one line per refusal naming the knob and the
// fix.
package config

import (
	"errors"
	"fmt"

	apiconfig "github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/libs/knob"
)

// Config is every knob gate-console reads. Build it with Load (or Default
// in tests, then Check).
type Config struct {
	// API is the application plane's configuration: the console mounts the
	// same handler package, so it reads the same knobs (QUEEN_URL,
	// GATE_KV_NAMESPACE, the history database PG_HOST/PG_URL…; GATE_BIND
	// is not listened on here).
	API apiconfig.Config
	// PublicBind is GATE_PUBLIC_BIND.
	PublicBind string
	// PublicURL is GATE_PUBLIC_URL in its canonical form
	// (knob.CanonicalOrigin: lower-case scheme and host, no default port,
	// no trailing slash).
	PublicURL string
	// DevEmail is GATE_DEV_EMAIL, lower case ("" = no bypass).
	DevEmail string
	// Issuer is GATE_OIDC_ISSUER.
	Issuer string
	// ClientID, ClientSecret are GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET.
	ClientID, ClientSecret string
	// AllowedDomains is GOOGLE_ALLOWED_DOMAINS, split and lower case.
	AllowedDomains []string
	// SessionSecret is GATE_SESSION_SECRET.
	SessionSecret string
	// NATSURL is GATE_NATS_URL ("" = the web app polls).
	NATSURL string
}

// Default is the configuration with every knob at its default (which does
// not boot: Check wants sign-in or a dev e-mail).
func Default() Config {
	return Config{
		API:        apiconfig.Default(),
		PublicBind: knob.DefaultPublicBind,
		PublicURL:  knob.DefaultPublicURL,
		Issuer:     knob.DefaultOIDCIssuer,
	}
}

// HTTPS reports whether the browser reaches the console over https, in
// any letter case of the scheme (knob.IsHTTPS): the dev bypass refusal,
// Strict-Transport-Security and the cookies' Secure all ask this.
func (c Config) HTTPS() bool { return knob.IsHTTPS(c.PublicURL) }

// SignIn reports whether OIDC sign-in is configured.
func (c Config) SignIn() bool { return c.ClientID != "" }

// Load reads every knob through getenv and applies Check. Every problem is
// reported at once, one line each.
func Load(getenv func(string) string) (Config, error) {
	c := Default()
	api, err := apiconfig.Load(getenv)
	errs := []error{err}
	c.API = api
	text := func(k knob.Text, dst *string) {
		v, err := k.Read(getenv)
		*dst = v
		errs = append(errs, err)
	}
	text(knob.PublicBind, &c.PublicBind)
	text(knob.PublicURL, &c.PublicURL)
	text(knob.DevEmail, &c.DevEmail)
	text(knob.OIDCIssuer, &c.Issuer)
	text(knob.ClientID, &c.ClientID)
	text(knob.ClientSecret, &c.ClientSecret)
	var domains string
	text(knob.AllowedDomains, &domains)
	c.AllowedDomains = knob.SplitList(domains)
	// The secret is taken as set, spaces and all: trimming would shorten it
	// silently.
	c.SessionSecret = getenv(knob.SessionSecret.Name)
	text(knob.NATSURL, &c.NATSURL)
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	return c, c.Check()
}

// Check is the boot refusals of gate-runtime.md §4.1, each one line naming
// the knob and the fix.
func (c Config) Check() error {
	var errs []error
	refuse := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.DevEmail != "" && c.HTTPS() {
		refuse("GATE_DEV_EMAIL is set and GATE_PUBLIC_URL=%s is https: the sign-in bypass is for local runs only; unset GATE_DEV_EMAIL and configure GOOGLE_CLIENT_ID/GOOGLE_CLIENT_SECRET", c.PublicURL)
	}
	if !c.SignIn() && c.DevEmail == "" {
		refuse("neither sign-in (GOOGLE_CLIENT_ID) nor GATE_DEV_EMAIL is configured: every console route needs an identity; set GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET, GOOGLE_ALLOWED_DOMAINS and GATE_SESSION_SECRET, or GATE_DEV_EMAIL=you@example.com on a local http URL")
	}
	if c.ClientSecret == "" && c.ClientID != "" {
		refuse("GOOGLE_CLIENT_ID is set without GOOGLE_CLIENT_SECRET: the code exchange needs both; set GOOGLE_CLIENT_SECRET to the OAuth client's secret")
	}
	if c.ClientSecret != "" && c.ClientID == "" {
		refuse("GOOGLE_CLIENT_SECRET is set without GOOGLE_CLIENT_ID: set GOOGLE_CLIENT_ID to the OAuth client's id, or unset the secret")
	}
	if c.SignIn() && len(c.AllowedDomains) == 0 {
		refuse("GOOGLE_ALLOWED_DOMAINS is empty while sign-in is configured: anyone with an account could sign in; set it to your e-mail domains, e.g. example.com,example.org")
	}
	switch {
	case c.SignIn() && c.SessionSecret == "":
		refuse("GATE_SESSION_SECRET is missing: it signs session cookies and sign-in state; set it to at least %d random bytes, e.g. $(openssl rand -base64 48)", knob.MinSessionSecretBytes)
	case c.SessionSecret != "" && len(c.SessionSecret) < knob.MinSessionSecretBytes:
		refuse("GATE_SESSION_SECRET is %d bytes, shorter than %d: a short secret lets cookies be forged; set it to at least %d random bytes, e.g. $(openssl rand -base64 48)", len(c.SessionSecret), knob.MinSessionSecretBytes, knob.MinSessionSecretBytes)
	case c.SessionSecret != "" && knob.SecretBits(c.SessionSecret) < knob.MinSessionSecretBits:
		refuse("GATE_SESSION_SECRET has too little entropy (about %.0f bits estimated from its characters, at least %d needed: blanks, one character or a short pattern repeated): anyone who guesses it can forge sessions; set it to random bytes, e.g. $(openssl rand -base64 48)", knob.SecretBits(c.SessionSecret), knob.MinSessionSecretBits)
	}
	errs = append(errs, knob.PublicBind.Validate(c.PublicBind), knob.PublicURL.Validate(c.PublicURL), knob.OIDCIssuer.Validate(c.Issuer), c.API.Validate())
	if c.DevEmail != "" {
		errs = append(errs, knob.DevEmail.Validate(c.DevEmail))
	}
	return errors.Join(errs...)
}

// RedirectURL is the sign-in callback the provider sends the browser back
// to (register it byte-exact with the OAuth client).
func (c Config) RedirectURL() string { return c.PublicURL + CallbackPath }

// The sign-in routes.
const (
	LoginPath    = "/api/auth/google/login"
	CallbackPath = "/api/auth/google/callback"
	LogoutPath   = "/api/auth/logout"
)
