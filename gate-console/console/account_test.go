package console

import (
	"net/http"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"
)

// hdUser is a mock provider's user whose id token carries an hd claim.
type hdUser struct {
	*mockoidc.MockUser
	hd string
}

type hdClaims struct {
	*mockoidc.IDTokenClaims
	Email         string `json:"email,omitempty"`
	EmailVerified bool   `json:"email_verified,omitempty"`
	HD            string `json:"hd,omitempty"`
}

func (u *hdUser) Claims(_ []string, c *mockoidc.IDTokenClaims) (jwt.Claims, error) {
	return &hdClaims{IDTokenClaims: c, Email: u.Email, EmailVerified: u.EmailVerified, HD: u.hd}, nil
}

// Which verified e-mails may sign in, per issuer: the e-mail's own domain
// is always checked; Google's hd must be allowed when present; another
// issuer's hd is ignored.
func TestAllowedAccountPerIssuer(t *testing.T) {
	allowed := []string{"example.com", "example.org"}
	cases := []struct {
		name      string
		google    bool
		hd, email string
		ok        bool
	}{
		{"google, workspace of an allowed domain", true, "example.com", "jane@example.com", true},
		{"google, no hd, allowed e-mail domain", true, "", "jane@example.org", true},
		{"google, allowed hd, foreign e-mail domain", true, "example.com", "mallory@evil.example", false},
		{"google, foreign workspace, allowed e-mail domain", true, "evil.example", "jane@example.com", false},
		{"google, foreign everything", true, "", "mallory@evil.example", false},
		{"oidc, allowed hd, foreign e-mail domain", false, "example.com", "mallory@evil.example", false},
		{"oidc, foreign hd ignored, allowed e-mail domain", false, "evil.example", "jane@example.com", true},
		{"oidc, no hd, allowed e-mail domain", false, "", "jane@example.org", true},
		{"oidc, subdomain is another domain", false, "", "jane@sub.example.com", false},
	}
	for _, c := range cases {
		why := allowedAccount(c.google, allowed, c.hd, c.email)
		if (why == "") != c.ok {
			t.Errorf("%s: allowedAccount(%v, %q, %q) = %q, want allowed %v", c.name, c.google, c.hd, c.email, why, c.ok)
		}
	}
	for claim, want := range map[string]string{
		"Jane.Doe@Example.com":                        "jane.doe@example.com",
		" jane@example.com ":                          "jane@example.com",
		"Admin <mallory@example.com>":                 "",
		"admin@example.com <mallory@example.com>":     "",
		"\"admin@example.com\" <mallory@example.com>": "",
		"mallory@example.com (admin@example.com)":     "",
		"jane@example.com, admin@example.com":         "",
		"not an address":                              "",
	} {
		got, ok := bareAddress(claim)
		if got != want || ok != (want != "") {
			t.Errorf("bareAddress(%q) = %q %v, want %q", claim, got, ok, want)
		}
	}
}

// Through the whole sign-in against an OIDC provider: an hd claim naming
// an allowed domain does not admit an e-mail of a foreign domain, and an
// e-mail with a display name is refused instead of becoming an identity
// that reads like another account.
func TestSignInRefusesForeignEmailsAndDisplayNames(t *testing.T) {
	o := newOIDCEnv(t)
	t.Run("hd of an allowed domain, e-mail of another", func(t *testing.T) {
		u, login := o.login(t, "/")
		user := mockoidc.DefaultUser()
		user.Email = "mallory@evil.example"
		code, b, res := o.callback(t, o.authorize(t, u, &hdUser{MockUser: user, hd: "example.com"}), login)
		if code != http.StatusForbidden || !strings.Contains(b, "evil.example is not an allowed domain") || sessionFrom(res) != nil {
			t.Errorf("hd example.com with mallory@evil.example = %d %s", code, b)
		}
	})
	t.Run("display name", func(t *testing.T) {
		u, login := o.login(t, "/")
		user := mockoidc.DefaultUser()
		user.Email = `"admin@example.com" <mallory@example.com>`
		code, b, res := o.callback(t, o.authorize(t, u, user), login)
		if code != http.StatusUnauthorized || !strings.Contains(b, "not a bare e-mail address") || sessionFrom(res) != nil {
			t.Errorf("an e-mail with a display name = %d %s", code, b)
		}
	})
	t.Run("a plain account of an allowed domain still signs in", func(t *testing.T) {
		u, login := o.login(t, "/")
		user := mockoidc.DefaultUser()
		user.Email = "Jane.Doe@Example.com"
		code, b, res := o.callback(t, o.authorize(t, u, &hdUser{MockUser: user, hd: "evil.example"}), login)
		if code != http.StatusSeeOther || sessionFrom(res) == nil {
			t.Errorf("jane@example.com with another issuer's foreign hd = %d %s", code, b)
		}
	})
}
