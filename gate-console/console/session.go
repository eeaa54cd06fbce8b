package console

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/queen-mq/gate/gate-console/config"
	"github.com/queen-mq/gate/gate-console/internal/token"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/knob"
	"github.com/queen-mq/gate/libs/wire"
)

// Session facts of gate-runtime.md §4.2.
const (
	// SessionCookie is the session cookie's name.
	SessionCookie = "gate_session"
	// SessionTTL is a session's lifetime.
	SessionTTL = 8 * time.Hour
	useSession = "session"
)

// Identity is who a console request is.
type Identity struct {
	// Actor is "dev", "google" or "oidc".
	Actor string
	// Email is lower case.
	Email string
	// Subject is the provider's stable user id ("" for the dev bypass).
	Subject string
	// Expires is when the session ends (zero for the dev bypass).
	Expires time.Time
}

type sessionClaims struct {
	token.Claims
	// SID is random per sign-in, so every sign-in mints a new cookie value.
	SID     string `json:"sid"`
	Subject string `json:"sub"`
	Email   string `json:"email"`
	Actor   string `json:"actor"`
}

type identityKey struct{}

// identityFrom returns the identity guard put on the request.
func identityFrom(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// identify resolves the request's identity: the dev bypass when
// GATE_DEV_EMAIL is set (never on https: config refuses it at boot),
// otherwise the session cookie. The error says why there is none.
func (s *Server) identify(r *http.Request) (Identity, error) {
	if s.cfg.DevEmail != "" && !s.cfg.HTTPS() {
		return Identity{Actor: "dev", Email: s.cfg.DevEmail}, nil
	}
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return Identity{}, errNoSession
	}
	var cl sessionClaims
	if err := s.signer.Verify(useSession, c.Value, &cl); err != nil {
		return Identity{}, err
	}
	if cl.Email == "" {
		return Identity{}, fmt.Errorf("%w: no e-mail", token.ErrMalformed)
	}
	return Identity{Actor: cl.Actor, Email: cl.Email, Subject: cl.Subject, Expires: time.Unix(cl.Expires, 0)}, nil
}

var errNoSession = errors.New("no session cookie")

// admin reports whether email is in GATE_ADMIN_EMAILS, read now (so an
// administrator is added or removed without a restart).
func (s *Server) admin(email string) bool {
	return slices.Contains(knob.SplitList(s.getenv(knob.AdminEmails.Name)), strings.ToLower(strings.TrimSpace(email)))
}

func (s *Server) role(email string) string {
	if s.admin(email) {
		return "admin"
	}
	return "viewer"
}

// issueSession sets a fresh session cookie for id (rotated: a new sid and
// value at every sign-in).
func (s *Server) issueSession(w http.ResponseWriter, id Identity) error {
	sid, err := randomString(16)
	if err != nil {
		return err
	}
	email := strings.ToLower(strings.TrimSpace(id.Email))
	tok, err := s.signer.Sign(useSession, SessionTTL, &sessionClaims{SID: sid, Subject: id.Subject, Email: email, Actor: id.Actor})
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: tok, Path: "/", MaxAge: int(SessionTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.cfg.HTTPS(),
	})
	return nil
}

func (s *Server) clearSession(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.cfg.HTTPS(),
	})
}

// guard is the session and rights layer in front of every console route
// but sign-in, /health and the static shell: an identity (else 401, or a
// redirect to sign-in for an HTML navigation), GATE_ADMIN_EMAILS for any
// method but GET and HEAD except the routes gate-api marks as reads
// (else 403), and a JSON body on anything but GET and HEAD (else 415).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := s.identify(r)
		if err != nil {
			// Every refusal here must reach a client still writing its
			// body (httpapi.DrainBody).
			httpapi.DrainBody(w, r)
			s.refuseAnonymous(w, r, err)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			// A POST that only reads (the candidate simulation) is a
			// viewer's too; its body must still be JSON.
			if !s.admin(id.Email) && !s.api.IsRead(r) {
				httpapi.DrainBody(w, r)
				httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusForbidden, wire.CodeReadOnly, "read-only: this account (%s) is not in GATE_ADMIN_EMAILS; an administrator adds it there (comma-separated, read on every request) to allow %s", id.Email, r.Method))
				return
			}
			if bad := jsonBody(r); bad != "" {
				httpapi.DrainBody(w, r)
				httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusUnsupportedMediaType, wire.CodeUnsupportedMediaType, "%s", bad).Field("Content-Type"))
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, id)))
	})
}

// refuseAnonymous answers a request without a usable session.
func (s *Server) refuseAnonymous(w http.ResponseWriter, r *http.Request, why error) {
	if !s.cfg.SignIn() {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusServiceUnavailable, wire.CodeSignInNotConfigured, "sign-in is not configured: set GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET, GOOGLE_ALLOWED_DOMAINS and GATE_SESSION_SECRET (or GATE_DEV_EMAIL on a local http URL) and restart gate-console"))
		return
	}
	var reason string
	switch {
	case errors.Is(why, errNoSession):
		reason = "no session"
	case errors.Is(why, token.ErrExpired):
		reason = "your session expired"
		s.clearSession(w)
	default:
		reason = "the session cookie is not valid (" + why.Error() + ")"
		s.clearSession(w)
	}
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && acceptsHTML(r) {
		http.Redirect(w, r, config.LoginPath+"?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusUnauthorized, wire.CodeSignInRequired, "sign in required: %s; sign in at %s", reason, config.LoginPath))
}

// jsonBody is "" when a write's body (if any) is declared JSON, else the
// refusal.
func jsonBody(r *http.Request) string {
	if r.ContentLength == 0 && len(r.TransferEncoding) == 0 {
		return ""
	}
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return ""
	}
	return fmt.Sprintf("a write's body must be JSON: Content-Type is %q; send Content-Type: application/json with a JSON body", ct)
}

func acceptsHTML(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

// randomString is n random bytes, base64url without padding.
func randomString(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
