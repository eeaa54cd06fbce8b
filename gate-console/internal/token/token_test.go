package token

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/clock"
)

type payload struct {
	Claims
	Email string `json:"email"`
}

// at is a clock standing at t.
func at(t time.Time) clock.Clock { return clock.NewVirtual(t) }

func TestSignVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := NewSigner([]byte("k-0123456789abcdef0123456789abcdef"), at(now))
	tok, err := s.Sign("session", time.Hour, &payload{Email: "a@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	var p payload
	if err := s.Verify("session", tok, &p); err != nil || p.Email != "a@example.com" || p.Expires != now.Add(time.Hour).Unix() {
		t.Fatalf("verify = %v %+v", err, p)
	}
	if err := s.Verify("state", tok, &p); !errors.Is(err, ErrMalformed) {
		t.Errorf("a session token passed as state: %v", err)
	}
	other := NewSigner([]byte("another-key-0123456789abcdef01234"), at(now))
	if err := other.Verify("session", tok, &p); !errors.Is(err, ErrSignature) {
		t.Errorf("another key: %v", err)
	}
	late := NewSigner([]byte("k-0123456789abcdef0123456789abcdef"), at(now.Add(time.Hour)))
	if err := late.Verify("session", tok, &p); !errors.Is(err, ErrExpired) {
		t.Errorf("at expiry: %v", err)
	}
	// Changing one payload byte breaks the signature.
	parts := strings.Split(tok, ".")
	parts[1] = "x" + parts[1][1:]
	if err := s.Verify("session", strings.Join(parts, "."), &p); !errors.Is(err, ErrSignature) {
		t.Errorf("tampered: %v", err)
	}
	// alg none and other headers are refused before anything is decoded.
	none := "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + parts[1] + "."
	if err := s.Verify("session", none, &p); !errors.Is(err, ErrMalformed) {
		t.Errorf("alg none: %v", err)
	}
}

func FuzzVerify(f *testing.F) {
	s := NewSigner([]byte("k-0123456789abcdef0123456789abcdef"), at(time.Unix(1_800_000_000, 0)))
	tok, _ := s.Sign("session", time.Hour, &payload{Email: "a@example.com"})
	f.Add(tok)
	f.Add("")
	f.Add("a.b.c")
	f.Add(encHeader + "..")
	f.Fuzz(func(t *testing.T, in string) {
		var p payload
		err := s.Verify("session", in, &p)
		if err == nil && in != tok {
			t.Fatalf("accepted a token it did not sign (or another spelling of one): %q", in)
		}
	})
}
