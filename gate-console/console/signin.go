package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/mail"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/queen-mq/gate/gate-console/config"
	"github.com/queen-mq/gate/gate-console/internal/token"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/knob"
	"github.com/queen-mq/gate/libs/wire"
)

// Sign-in facts of gate-runtime.md §4.2.
const (
	// StateTTL is how long a sign-in may take from login to callback.
	StateTTL = 300 * time.Second
	// LoginCookie binds a sign-in to the browser that started it and keeps
	// the PKCE verifier off the URL.
	LoginCookie = "gate_login"
	useState    = "state"
	useLogin    = "login"
	maxNextLen  = 2048
)

type stateClaims struct {
	token.Claims
	// SID ties the state to the login cookie.
	SID   string `json:"sid"`
	Nonce string `json:"nonce"`
	Next  string `json:"next"`
}

type loginClaims struct {
	token.Claims
	SID      string `json:"sid"`
	Verifier string `json:"verifier"`
}

// signin is the OIDC authorization-code flow with PKCE against
// GATE_OIDC_ISSUER (Google by default). The provider's discovery document
// is fetched at the first sign-in, not at boot, and retried on failure.
type signin struct {
	s      *Server
	client *http.Client

	mu       sync.Mutex
	provider *oidc.Provider
}

func newSignin(s *Server, client *http.Client) *signin { return &signin{s: s, client: client} }

func (si *signin) actor() string {
	if si.s.cfg.Issuer == knob.DefaultOIDCIssuer {
		return "google"
	}
	return "oidc"
}

func (si *signin) ctx(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, si.client)
}

// discover returns the provider, fetching its discovery document once.
func (si *signin) discover(ctx context.Context) (*oidc.Provider, error) {
	si.mu.Lock()
	defer si.mu.Unlock()
	if si.provider != nil {
		return si.provider, nil
	}
	p, err := oidc.NewProvider(si.ctx(ctx), si.s.cfg.Issuer)
	if err != nil {
		return nil, err
	}
	si.provider = p
	return p, nil
}

func (si *signin) oauth(p *oidc.Provider) *oauth2.Config {
	c := si.s.cfg
	return &oauth2.Config{
		ClientID: c.ClientID, ClientSecret: c.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: c.RedirectURL(), Scopes: []string{oidc.ScopeOpenID, "email", "profile"},
	}
}

// safeNext keeps a post-sign-in destination on this origin: a cleaned
// path (and its query), never a scheme, a host, a protocol-relative "//",
// a backslash (which browsers read as a slash) or a control character
// (browsers drop tabs and newlines, so "/\t/evil" would become "//evil").
// The path is percent-decoded and cleaned (dot segments resolved,
// repeated slashes folded) before it is checked, so "/./\\evil",
// "/a/../\\evil" and "/%2F%2Fevil" cannot turn into another host; what
// is left is written back encoded. Anything else is "/".
func safeNext(next string) string {
	if next == "" || len(next) > maxNextLen || next[0] != '/' {
		return "/"
	}
	for _, c := range []byte(next) {
		if c < 0x20 || c == 0x7f || c == '\\' {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
		return "/"
	}
	for _, c := range []byte(u.Path + u.RawQuery) {
		if c < 0x20 || c == 0x7f || c == '\\' {
			return "/"
		}
	}
	clean := path.Clean(u.Path)
	if strings.HasSuffix(u.Path, "/") && clean != "/" {
		clean += "/"
	}
	if !strings.HasPrefix(clean, "/") || strings.HasPrefix(clean, "//") {
		return "/"
	}
	out := (&url.URL{Path: clean, RawQuery: u.RawQuery}).String()
	// The written form is what the browser follows: check it once more.
	if !strings.HasPrefix(out, "/") || strings.HasPrefix(out, "//") || strings.ContainsAny(out, "\\\r\n\t") {
		return "/"
	}
	return out
}

// login is GET /api/auth/google/login?next=…: a 303 to the provider with a
// signed state (nonce, next; 300 s), the nonce and a PKCE challenge.
func (si *signin) login(w http.ResponseWriter, r *http.Request) {
	c := si.s.cfg
	if !c.SignIn() {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusServiceUnavailable, wire.CodeSignInNotConfigured, "sign-in is not configured: set GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET, GOOGLE_ALLOWED_DOMAINS and GATE_SESSION_SECRET and restart gate-console"))
		return
	}
	p, err := si.discover(r.Context())
	if err != nil {
		si.s.log.Warn("sign-in provider discovery failed", "issuer", c.Issuer, "error", err)
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusBadGateway, wire.CodeSignInProviderFailed, "the sign-in provider %s did not answer its discovery document (%v): check GATE_OIDC_ISSUER and the network, then retry", c.Issuer, err))
		return
	}
	sid, err1 := randomString(16)
	nonce, err2 := randomString(16)
	if err := errors.Join(err1, err2); err != nil {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusInternalServerError, wire.CodeInternalError, "no randomness for the sign-in state: %v", err))
		return
	}
	verifier := oauth2.GenerateVerifier()
	state, err1 := si.s.signer.Sign(useState, StateTTL, &stateClaims{SID: sid, Nonce: nonce, Next: safeNext(r.URL.Query().Get("next"))})
	cookie, err2 := si.s.signer.Sign(useLogin, StateTTL, &loginClaims{SID: sid, Verifier: verifier})
	if err := errors.Join(err1, err2); err != nil {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusInternalServerError, wire.CodeInternalError, "signing the sign-in state failed: %v", err))
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: LoginCookie, Value: cookie, Path: "/api/auth/", MaxAge: int(StateTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: c.HTTPS(),
	})
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce), oauth2.SetAuthURLParam("prompt", "select_account")}
	if len(c.AllowedDomains) > 0 {
		opts = append(opts, oauth2.SetAuthURLParam("hd", c.AllowedDomains[0]))
	}
	http.Redirect(w, r, si.oauth(p).AuthCodeURL(state, opts...), http.StatusSeeOther)
}

// callback is GET /api/auth/google/callback?code&state: 400 for a missing,
// bad or expired state; 502 when the code exchange fails; 401 for an id
// token that does not verify (audience, issuer, expiry, signature, nonce);
// 403 for an unverified e-mail or a domain outside GOOGLE_ALLOWED_DOMAINS;
// else a fresh session cookie and a 303 to next.
func (si *signin) callback(w http.ResponseWriter, r *http.Request) {
	c := si.s.cfg
	if !c.SignIn() {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusServiceUnavailable, wire.CodeSignInNotConfigured, "sign-in is not configured: set GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET, GOOGLE_ALLOWED_DOMAINS and GATE_SESSION_SECRET and restart gate-console"))
		return
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusBadRequest, wire.CodeSignInRefused, "the sign-in provider refused: %.200s %.200s; try again from %s", e, q.Get("error_description"), config.LoginPath).Field("error"))
		return
	}
	code, rawState := q.Get("code"), q.Get("state")
	if code == "" || rawState == "" {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusBadRequest, wire.CodeSignInState, "the sign-in callback needs code and state: start sign-in at %s", config.LoginPath).Field("state"))
		return
	}
	var st stateClaims
	if err := si.s.signer.Verify(useState, rawState, &st); err != nil {
		msg := "the sign-in state is not valid (" + err.Error() + "): start sign-in again at " + config.LoginPath
		if errors.Is(err, token.ErrExpired) {
			msg = fmt.Sprintf("the sign-in state expired (sign-in must finish within %d s): start sign-in again at %s", int(StateTTL/time.Second), config.LoginPath)
		}
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusBadRequest, wire.CodeSignInState, "%s", msg).Field("state"))
		return
	}
	var lc loginClaims
	lcookie, err := r.Cookie(LoginCookie)
	if err == nil {
		err = si.s.signer.Verify(useLogin, lcookie.Value, &lc)
	}
	if err != nil || lc.SID != st.SID {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusBadRequest, wire.CodeSignInState, "this sign-in was not started in this browser (no matching gate_login cookie): start sign-in again at %s", config.LoginPath).Field("state"))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: LoginCookie, Value: "", Path: "/api/auth/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: c.HTTPS()})
	p, err := si.discover(r.Context())
	if err != nil {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusBadGateway, wire.CodeSignInProviderFailed, "the sign-in provider %s did not answer its discovery document (%v): retry", c.Issuer, err))
		return
	}
	ctx := si.ctx(r.Context())
	tok, err := si.oauth(p).Exchange(ctx, code, oauth2.VerifierOption(lc.Verifier))
	var refused *oauth2.RetrieveError
	if errors.As(err, &refused) && refused.ErrorCode == "invalid_grant" {
		// The provider refused this code — already used (a replayed or
		// reloaded callback), expired, or never issued to this client: the
		// request's fault, not the provider's or Gate's.
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusBadRequest, wire.CodeSignInRefused, "the sign-in provider refused this sign-in code (invalid_grant: it was already used, has expired, or was issued for another sign-in): start sign-in again at %s", config.LoginPath).Field("code"))
		return
	}
	if err != nil {
		si.s.log.Warn("sign-in code exchange failed", "issuer", c.Issuer, "error", err)
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusBadGateway, wire.CodeSignInProviderFailed, "the sign-in provider refused the code exchange (%v): start sign-in again at %s", err, config.LoginPath).Field("code"))
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusUnauthorized, wire.CodeSignInToken, "the sign-in provider answered without an id_token: check that GATE_OIDC_ISSUER is an OpenID Connect provider"))
		return
	}
	idt, err := p.VerifierContext(ctx, &oidc.Config{ClientID: c.ClientID, Now: si.s.clock.Now}).Verify(ctx, raw)
	if err != nil {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusUnauthorized, wire.CodeSignInToken, "the id token did not verify (%v): start sign-in again at %s", err, config.LoginPath))
		return
	}
	if idt.Nonce != st.Nonce {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusUnauthorized, wire.CodeSignInToken, "the id token's nonce does not match this sign-in (a replayed or foreign token): start sign-in again at %s", config.LoginPath).Field("nonce"))
		return
	}
	var claims struct {
		Sub           string `json:"sub"`
		Email         string `json:"email"`
		EmailVerified any    `json:"email_verified"`
		HD            string `json:"hd"`
	}
	if err := idt.Claims(&claims); err != nil || claims.Sub == "" || claims.Email == "" {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusUnauthorized, wire.CodeSignInToken, "the id token carries no sub or email: grant the email scope to the OAuth client"))
		return
	}
	email, ok := bareAddress(claims.Email)
	if !ok {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusUnauthorized, wire.CodeSignInToken, "the id token's email claim %.200q is not a bare e-mail address (a display name, a comment or several addresses would make a misleading identity): configure the provider to send the address alone", claims.Email).Field("email"))
		return
	}
	if v := claims.EmailVerified; v != true && v != "true" {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusForbidden, wire.CodeAccountNotAllowed, "the e-mail %s is not verified by the sign-in provider: verify it there, then sign in again", email).Field("email_verified"))
		return
	}
	if why := allowedAccount(si.actor() == "google", c.AllowedDomains, claims.HD, email); why != "" {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusForbidden, wire.CodeAccountNotAllowed, "the account %s is not allowed: %s (GOOGLE_ALLOWED_DOMAINS=%s); sign in with an account of one of them, or ask an administrator to add the domain", email, why, strings.Join(c.AllowedDomains, ",")).Field("email"))
		return
	}
	if err := si.s.issueSession(w, Identity{Actor: si.actor(), Email: email, Subject: claims.Sub}); err != nil {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusInternalServerError, wire.CodeInternalError, "minting the session failed: %v", err))
		return
	}
	si.s.log.Info("signed in", "email", email, "role", si.s.role(email))
	http.Redirect(w, r, safeNext(st.Next), http.StatusSeeOther)
}

// bareAddress is the id token's email claim as an identity: a bare
// address (no display name, comment or list; "Admin <mallory@x>" is not
// one), in lower case. ok is false for anything else.
func bareAddress(claim string) (string, bool) {
	v := strings.TrimSpace(claim)
	a, err := mail.ParseAddress(v)
	if err != nil || a.Name != "" || a.Address != v || !strings.Contains(v, "@") {
		return "", false
	}
	return strings.ToLower(v), true
}

// allowedAccount decides whether a verified e-mail may sign in, per issuer
// ("" when it may, else why not). The e-mail's own domain must always be
// in the allowed list: a token whose hd names an allowed domain while its
// e-mail is of another (an alias, a foreign account) is refused. With
// Google (the default issuer) hd is Google's statement of the Workspace
// the account belongs to, so when it is present it must be allowed too;
// any other issuer's hd is not a standard claim (the provider, or whoever
// configures it, may put anything there), so it is ignored.
func allowedAccount(google bool, allowed []string, hd, email string) string {
	_, domain, ok := strings.Cut(email, "@")
	if !ok || !slices.Contains(allowed, strings.ToLower(domain)) {
		if hd != "" && slices.Contains(allowed, strings.ToLower(hd)) {
			return fmt.Sprintf("its e-mail's domain %s is not an allowed domain, although the token's hd claim says %s", domain, hd)
		}
		return fmt.Sprintf("its e-mail's domain %s is not an allowed domain", domain)
	}
	if google && hd != "" && !slices.Contains(allowed, strings.ToLower(hd)) {
		return fmt.Sprintf("it belongs to the Google Workspace %s (hd), which is not an allowed domain", hd)
	}
	return ""
}
