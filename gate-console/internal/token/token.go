// Package token signs and verifies the console's own compact tokens: HS256
// JWTs (RFC 7519) carrying the session cookie and the sign-in state. Every
// token names its use, so a state token can never pass for a session.
package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queen-mq/gate/libs/clock"
)

// header is the only header this package writes or accepts.
const header = `{"alg":"HS256","typ":"JWT"}`

var encHeader = base64.RawURLEncoding.EncodeToString([]byte(header))

// strict decodes base64url without padding and refuses non-zero trailing
// bits, so each token has exactly one accepted spelling.
var strict = base64.RawURLEncoding.Strict()

// MaxLen bounds a token this package will look at (a cookie is at most
// 4 KiB anyway).
const MaxLen = 4096

// Errors a caller branches on.
var (
	// ErrMalformed: not a token of this package (wrong shape, header or use).
	ErrMalformed = errors.New("malformed token")
	// ErrSignature: the signature does not match the secret.
	ErrSignature = errors.New("token signature does not match")
	// ErrExpired: the token's exp has passed.
	ErrExpired = errors.New("token expired")
)

// Claims are the fields every token carries; a payload embeds it.
type Claims struct {
	// Use is what the token is for ("session", "state", "login").
	Use string `json:"use"`
	// IssuedAt and Expires are Unix seconds.
	IssuedAt int64 `json:"iat"`
	Expires  int64 `json:"exp"`
}

// Base returns the common claims.
func (c *Claims) Base() *Claims { return c }

// Payload is a struct embedding Claims.
type Payload interface{ Base() *Claims }

// Signer signs and verifies with one secret and clock.
type Signer struct {
	key   []byte
	clock clock.Clock
}

// NewSigner returns a signer for secret on clk (nil: the wall clock).
func NewSigner(secret []byte, clk clock.Clock) *Signer {
	return &Signer{key: append([]byte(nil), secret...), clock: clock.Or(clk)}
}

// Now is the time on the signer's clock.
func (s *Signer) Now() time.Time { return s.clock.Now() }

// Sign stamps p with use, issued-at now and expiry now+ttl and returns the
// token.
func (s *Signer) Sign(use string, ttl time.Duration, p Payload) (string, error) {
	b := p.Base()
	now := s.clock.Now()
	b.Use, b.IssuedAt, b.Expires = use, now.Unix(), now.Add(ttl).Unix()
	body, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encoding %s token: %w", use, err)
	}
	signed := encHeader + "." + base64.RawURLEncoding.EncodeToString(body)
	return signed + "." + base64.RawURLEncoding.EncodeToString(s.mac(signed)), nil
}

// Verify checks tok's header, signature, use and expiry and decodes it into
// p. The error wraps ErrMalformed, ErrSignature or ErrExpired.
func (s *Signer) Verify(use, tok string, p Payload) error {
	if len(tok) > MaxLen {
		return fmt.Errorf("%w: longer than %d bytes", ErrMalformed, MaxLen)
	}
	h, rest, ok := strings.Cut(tok, ".")
	if !ok || h != encHeader {
		return fmt.Errorf("%w: not an HS256 token of gate-console", ErrMalformed)
	}
	body, sig, ok := strings.Cut(rest, ".")
	if !ok {
		return fmt.Errorf("%w: no signature", ErrMalformed)
	}
	got, err := strict.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(h+"."+body)) {
		return ErrSignature
	}
	raw, err := strict.DecodeString(body)
	if err != nil {
		return fmt.Errorf("%w: payload is not base64url", ErrMalformed)
	}
	if err := json.Unmarshal(raw, p); err != nil {
		return fmt.Errorf("%w: payload: %v", ErrMalformed, err)
	}
	b := p.Base()
	if b.Use != use {
		return fmt.Errorf("%w: a %q token where a %q token belongs", ErrMalformed, b.Use, use)
	}
	if now := s.clock.Now().Unix(); now >= b.Expires {
		return fmt.Errorf("%w at %s", ErrExpired, time.Unix(b.Expires, 0).UTC().Format(time.RFC3339))
	}
	return nil
}

func (s *Signer) mac(signed string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(signed))
	return m.Sum(nil)
}
