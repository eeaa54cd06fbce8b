package knob

import (
	"math"
	"net"
	"net/mail"
	"net/url"
	"strings"
)

// The console plane's knobs (gate-console), each defined once.
var (
	// PublicBind is the console's listen address.
	PublicBind = Text{Name: "GATE_PUBLIC_BIND", Default: DefaultPublicBind, Check: checkHostPort}
	// PublicURL is what the browser sees: it decides Secure cookies,
	// Strict-Transport-Security, whether the dev bypass may run, the
	// trusted origin of cross-site checks and the sign-in redirect URI.
	// It is read in its canonical form (CanonicalOrigin), and IsHTTPS is
	// the one test of whether it is https.
	PublicURL = Text{Name: "GATE_PUBLIC_URL", Default: DefaultPublicURL, Normalize: CanonicalOrigin, Check: checkPublicURL}
	// DevEmail is the local sign-in bypass identity (never on https).
	DevEmail = Text{Name: "GATE_DEV_EMAIL", Normalize: strings.ToLower, Check: checkEmail}
	// AdminEmails is the comma-separated list of identities that may
	// write; gate-console reads it on every request.
	AdminEmails = Text{Name: "GATE_ADMIN_EMAILS"}
	// OIDCIssuer is the sign-in provider's issuer URL (Google by default;
	// any OIDC provider with discovery works).
	OIDCIssuer = Text{Name: "GATE_OIDC_ISSUER", Default: DefaultOIDCIssuer, Normalize: trimSlash, Check: checkIssuer}
	// ClientID and ClientSecret are the OAuth client of the sign-in
	// provider.
	ClientID     = Text{Name: "GOOGLE_CLIENT_ID"}
	ClientSecret = Text{Name: "GOOGLE_CLIENT_SECRET"}
	// AllowedDomains is the comma-separated list of e-mail domains that
	// may sign in (checked against hd or the e-mail's domain).
	AllowedDomains = Text{Name: "GOOGLE_ALLOWED_DOMAINS", Normalize: strings.ToLower}
	// SessionSecret signs session cookies and sign-in state (≥ 32 bytes).
	SessionSecret = Text{Name: "GATE_SESSION_SECRET"}
	// NATSURL is the NATS server the relays publish live counters on.
	NATSURL = Text{Name: "GATE_NATS_URL", Check: checkNATSURL}
)

// Defaults of the console knobs.
const (
	// DefaultPublicBind is GATE_PUBLIC_BIND's default.
	DefaultPublicBind = "0.0.0.0:8790"
	// DefaultPublicURL is GATE_PUBLIC_URL's default.
	DefaultPublicURL = "http://localhost:8790"
	// DefaultOIDCIssuer is GATE_OIDC_ISSUER's default: Google.
	DefaultOIDCIssuer = "https://accounts.google.com"
	// MinSessionSecretBytes is the shortest GATE_SESSION_SECRET accepted.
	MinSessionSecretBytes = 32
	// MinSessionSecretBits is the least estimated entropy (SecretBits) a
	// GATE_SESSION_SECRET must have: 32 random hex digits estimate about
	// 115, $(openssl rand -base64 48) about 350; 32 spaces estimate 0 and
	// "0123456789abcdef" twice 64.
	MinSessionSecretBits = 96
)

// SecretBits estimates the entropy of a secret in bits, from its own
// bytes: the Shannon entropy of their frequencies times the length of
// the secret's shortest repeating unit (a secret that is one short run
// repeated has no more entropy than the run). It is an upper bound for
// what it measures — a dictionary phrase estimates high — and exists to
// refuse the secrets a typo or a placeholder makes: blanks, one
// character repeated, a short pattern repeated.
func SecretBits(v string) float64 {
	n := len(v)
	if n == 0 {
		return 0
	}
	period := n
	for p := 1; p < n; p++ {
		if v[p:] == v[:n-p] {
			period = p
			break
		}
	}
	var counts [256]int
	for i := 0; i < n; i++ {
		counts[v[i]]++
	}
	var h float64
	for _, c := range counts {
		if c > 0 {
			f := float64(c) / float64(n)
			h -= f * math.Log2(f)
		}
	}
	return h * float64(period)
}

// SplitList splits a comma-separated knob value into trimmed, lower-case,
// non-empty items (GATE_ADMIN_EMAILS, GOOGLE_ALLOWED_DOMAINS).
func SplitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func trimSlash(v string) string { return strings.TrimRight(v, "/") }

// CanonicalOrigin is an http(s) origin the way a browser writes it in an
// Origin header: scheme and host in lower case, the scheme's default port
// (:443 on https, :80 on http) and any trailing slash dropped. A value that
// does not parse as a URL with a host comes back with only its trailing
// slashes trimmed, for the knob's check to refuse.
func CanonicalOrigin(v string) string {
	v = trimSlash(strings.TrimSpace(v))
	u, err := url.Parse(v)
	if err != nil || u.Host == "" {
		return v
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Host)
	if h, port, err := net.SplitHostPort(host); err == nil && (scheme == "https" && port == "443" || scheme == "http" && port == "80") {
		host = h
		if strings.Contains(h, ":") {
			host = "[" + h + "]"
		}
	}
	u.Scheme, u.Host = scheme, host
	if u.Path == "/" {
		u.Path = ""
	}
	return u.String()
}

// IsHTTPS reports whether an origin or URL is https, in any letter case
// ("HTTPS://…" is https): the one test behind every https decision of the
// console (the dev bypass refusal, Strict-Transport-Security, Secure
// cookies).
func IsHTTPS(v string) bool {
	u, err := url.Parse(strings.TrimSpace(v))
	return err == nil && strings.EqualFold(u.Scheme, "https")
}

func checkHostPort(v string) string {
	if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
		return "is not host:port; set it to e.g. " + DefaultPublicBind
	}
	return ""
}

func checkPublicURL(v string) string {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "is not an http(s) origin; set it to the scheme and host the browser uses, e.g. https://gate.example.com (no path)"
	}
	return ""
}

func checkEmail(v string) string {
	if a, err := mail.ParseAddress(v); err != nil || a.Address != v {
		return "is not an e-mail address; set it to the identity the local bypass signs in as, e.g. you@example.com"
	}
	return ""
}

func checkNATSURL(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || (u.Scheme != "nats" && u.Scheme != "tls" && u.Scheme != "ws" && u.Scheme != "wss") {
		return "is not a NATS URL; set it to e.g. nats://127.0.0.1:4222, or unset it to poll instead of streaming"
	}
	return ""
}

func checkIssuer(v string) string {
	if u, err := url.Parse(v); err != nil || u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname())) || u.Host == "" {
		return "is not an https issuer URL; set it to the provider's issuer (discovery at ISSUER/.well-known/openid-configuration), e.g. " + DefaultOIDCIssuer
	}
	return ""
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
