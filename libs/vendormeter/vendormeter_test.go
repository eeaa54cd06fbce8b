package vendormeter

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func hs(kv ...string) []Header {
	var out []Header
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, Header{Name: kv[i], Value: kv[i+1]})
	}
	return out
}

func TestParseReadsEachFamily(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		status int
		fam    Family
		want   string
		h      []Header
		check  func(t *testing.T, r Reading)
	}{
		{"x-ratelimit with seconds from now", 200, XRateLimit, "", hs("X-RateLimit-Limit", "20", "X-RateLimit-Remaining", "7", "X-RateLimit-Reset", "1"), func(t *testing.T, r Reading) {
			if r.Limit != 20 || r.Remaining != 7 || r.Used != 13 || r.Reset != time.Second || r.ResetRule != ResetSeconds {
				t.Fatalf("reading %+v", r)
			}
		}},
		{"x-ratelimit reset in epoch seconds", 200, XRateLimit, "", hs("x-ratelimit-limit", "100", "x-ratelimit-remaining", "0", "x-ratelimit-reset", "1796212830"), func(t *testing.T, r Reading) {
			if r.ResetRule != ResetEpochSeconds || r.Reset != 30*time.Second || r.Used != 100 {
				t.Fatalf("reading %+v", r)
			}
		}},
		{"x-ratelimit reset in epoch milliseconds", 200, XRateLimit, "", hs("X-RateLimit-Reset", "1796212800500"), func(t *testing.T, r Reading) {
			if r.ResetRule != ResetEpochMillis || r.Reset != 500*time.Millisecond {
				t.Fatalf("reading %+v", r)
			}
		}},
		{"x-ratelimit fractional seconds", 200, XRateLimit, "", hs("X-RateLimit-Reset", "0.25"), func(t *testing.T, r Reading) {
			if r.ResetRule != ResetSeconds || r.Reset != 250*time.Millisecond {
				t.Fatalf("reading %+v", r)
			}
		}},
		{"an epoch a few seconds past reads as now", 200, XRateLimit, "", hs("X-RateLimit-Reset", "1796212795"), func(t *testing.T, r Reading) {
			if r.Reset != 0 || !r.HasReset {
				t.Fatalf("reading %+v", r)
			}
		}},
		{"github with used and resource", 200, GitHub, "core", hs("x-ratelimit-limit", "5000", "x-ratelimit-remaining", "4990", "x-ratelimit-used", "10", "x-ratelimit-reset", "1796214600", "x-ratelimit-resource", "core"), func(t *testing.T, r Reading) {
			if r.Used != 10 || r.Policy != "core" || r.Reset != 30*time.Minute {
				t.Fatalf("reading %+v", r)
			}
		}},
		{"ietf policy and remaining", 200, IETF, "", hs("RateLimit-Policy", `"burst";q=100;w=60, "daily";q=1000;w=86400`, "RateLimit", `"burst";r=40;t=12`), func(t *testing.T, r Reading) {
			if r.Limit != 100 || r.Window != time.Minute || r.Remaining != 40 || r.Used != 60 || r.Reset != 12*time.Second || r.Policy != "burst" {
				t.Fatalf("reading %+v", r)
			}
		}},
		{"ietf by name picks the named policy", 200, IETF, "daily", hs("RateLimit-Policy", `"burst";q=100;w=60, "daily";q=1000;w=86400;qu="requests"`, "RateLimit", `"burst";r=40;t=12, "daily";r=900;t=3600`), func(t *testing.T, r Reading) {
			if r.Limit != 1000 || r.Remaining != 900 || r.Window != 24*time.Hour {
				t.Fatalf("reading %+v", r)
			}
		}},
		{"ietf token names and the policy alone", 200, IETF, "", hs("RateLimit-Policy", `default;q=10;w=1;pk=:cHsdsRa894==:`), func(t *testing.T, r Reading) {
			if r.Limit != 10 || r.HasRemaining || r.Window != time.Second {
				t.Fatalf("reading %+v", r)
			}
		}},
		{"429 with Retry-After seconds", 429, XRateLimit, "", hs("Retry-After", "3", "X-RateLimit-Limit", "10", "X-RateLimit-Remaining", "0"), func(t *testing.T, r Reading) {
			if !r.HasRetryAfter || r.RetryAfter != 3*time.Second || !r.Refused() {
				t.Fatalf("reading %+v", r)
			}
		}},
		{"503 with Retry-After as an HTTP-date", 503, IETF, "", hs("Retry-After", "Wed, 02 Dec 2026 12:00:10 GMT"), func(t *testing.T, r Reading) {
			if r.RetryAfter != 10*time.Second {
				t.Fatalf("reading %+v", r)
			}
		}},
		{"Retry-After 0 waits a second", 429, XRateLimit, "", hs("Retry-After", "0"), func(t *testing.T, r Reading) {
			if r.RetryAfter != time.Second {
				t.Fatalf("reading %+v", r)
			}
		}},
		{"Retry-After on a 200 is not read", 200, XRateLimit, "", hs("Retry-After", "nonsense"), func(t *testing.T, r Reading) {
			if r.HasRetryAfter || r.Says() {
				t.Fatalf("reading %+v", r)
			}
		}},
		{"other families are ignored", 200, IETF, "", hs("X-RateLimit-Limit", "junk"), func(t *testing.T, r Reading) {
			if r.Says() {
				t.Fatalf("reading %+v", r)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r, err := Parse(c.status, c.h, Options{Family: c.fam, Name: c.want, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, r)
		})
	}
}

func TestParseRefusesBadValuesNamingTheHeader(t *testing.T) {
	t.Parallel()
	many := make([]Header, MaxHeaders+1)
	for i := range many {
		many[i] = Header{Name: "X-A", Value: "1"}
	}
	fat := make([]Header, 20)
	for i := range fat {
		fat[i] = Header{Name: "X-Fat", Value: strings.Repeat("a", MaxValueBytes)}
	}
	cases := []struct {
		name   string
		status int
		fam    Family
		h      []Header
		header string
		says   string
	}{
		{"negative limit", 200, XRateLimit, hs("X-RateLimit-Limit", "-5"), "X-RateLimit-Limit", "negative"},
		{"non-numeric remaining", 200, XRateLimit, hs("X-RateLimit-Remaining", "lots"), "X-RateLimit-Remaining", "whole number"},
		{"huge limit", 200, XRateLimit, hs("X-RateLimit-Limit", "99999999999999999999999"), "X-RateLimit-Limit", "too long"},
		{"remaining above limit", 200, XRateLimit, hs("X-RateLimit-Limit", "10", "X-RateLimit-Remaining", "11"), "X-RateLimit-Remaining", "above the limit"},
		{"sent twice", 200, XRateLimit, hs("X-RateLimit-Limit", "10", "x-ratelimit-limit", "20"), "X-RateLimit-Limit", "sent 2 times"},
		{"dated reset", 200, XRateLimit, hs("X-RateLimit-Reset", "1700000000"), "X-RateLimit-Reset", "dated"},
		{"reset too far", 200, XRateLimit, hs("X-RateLimit-Reset", "999999999"), "X-RateLimit-Reset", "over"},
		{"negative reset", 200, XRateLimit, hs("X-RateLimit-Reset", "-1"), "X-RateLimit-Reset", "negative"},
		{"reset garbage", 200, XRateLimit, hs("X-RateLimit-Reset", "soon"), "X-RateLimit-Reset", "not a number"},
		{"negative Retry-After", 429, XRateLimit, hs("Retry-After", "-3"), "Retry-After", "negative"},
		{"dated Retry-After", 429, XRateLimit, hs("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"), "Retry-After", "dated"},
		{"Retry-After junk", 503, XRateLimit, hs("Retry-After", "later"), "Retry-After", "HTTP-date"},
		{"Retry-After huge", 429, XRateLimit, hs("Retry-After", "99999999999"), "Retry-After", "over"},
		{"ietf without q", 200, IETF, hs("RateLimit-Policy", `"a";w=1`), "RateLimit-Policy", "no q="},
		{"ietf negative r", 200, IETF, hs("RateLimit", `"a";r=-1;t=1`), "RateLimit", "negative"},
		{"ietf decimal q", 200, IETF, hs("RateLimit-Policy", `"a";q=1.5`), "RateLimit-Policy", "Integer"},
		{"ietf inner list", 200, IETF, hs("RateLimit", `("a" "b");r=1;t=1`), "RateLimit", "inner list"},
		{"ietf unclosed string", 200, IETF, hs("RateLimit", `"a;r=1;t=1`), "RateLimit", "not closed"},
		{"ietf trailing comma", 200, IETF, hs("RateLimit", `"a";r=1;t=1,`), "RateLimit", "trailing"},
		{"ietf r above q", 200, IETF, hs("RateLimit-Policy", `"a";q=5`, "RateLimit", `"a";r=6;t=1`), "RateLimit", "above its quota"},
		{"ietf zero window", 200, IETF, hs("RateLimit-Policy", `"a";q=5;w=0`), "RateLimit-Policy", "w=0"},
		{"ietf 16-digit integer", 200, IETF, hs("RateLimit", `"a";r=1234567890123456;t=1`), "RateLimit", "15 digits"},
		{"thousands of headers", 200, XRateLimit, many, "", "header lines"},
		{"a megabyte of headers", 200, XRateLimit, fat, "", "bytes"},
		{"a value too long", 200, XRateLimit, hs("X-RateLimit-Limit", strings.Repeat("1", MaxValueBytes+1)), "X-RateLimit-Limit", "bytes"},
		{"a name that is no token", 200, XRateLimit, hs("X RateLimit", "1"), "X RateLimit", "token"},
		{"a line break in a value", 200, XRateLimit, hs("X-RateLimit-Limit", "1\r\nSet-Cookie: a"), "X-RateLimit-Limit", "line break"},
		{"no status", 0, XRateLimit, nil, "", "status"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(c.status, c.h, Options{Family: c.fam, Now: now})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v, want *Error", err)
			}
			if e.Header != c.header || !strings.Contains(e.Problem, c.says) {
				t.Fatalf("error %q (header %q), want header %q saying %q", err, e.Header, c.header, c.says)
			}
		})
	}
}

func TestParseTellsAnotherMeterApart(t *testing.T) {
	t.Parallel()
	_, err := Parse(200, hs("x-ratelimit-resource", "search", "x-ratelimit-limit", "30"), Options{Family: GitHub, Name: "core", Now: now})
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("github: %v, want ErrMismatch", err)
	}
	_, err = Parse(200, hs("RateLimit", `"burst";r=1;t=1`), Options{Family: IETF, Name: "daily", Now: now})
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("ietf: %v, want ErrMismatch", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(200, "X-RateLimit-Limit", "20", "X-RateLimit-Reset", "1796212830", "x-ratelimit-remaining", "3")
	f.Add(429, "RateLimit-Policy", `"a";q=10;w=1`, "RateLimit", `"a";r=0;t=1`, "Retry-After", "2")
	f.Add(503, "Retry-After", "Wed, 02 Dec 2026 12:00:10 GMT", "x-ratelimit-used", "5", "x-ratelimit-resource", "core")
	f.Add(200, "RateLimit", `a;r=1;t=1;x="\"";y=?1;z=:AA==:;d=1.25`, "ratelimit-policy", "a;q=2", "", "")
	f.Fuzz(func(t *testing.T, status int, n1, v1, n2, v2, n3, v3 string) {
		h := []Header{{n1, v1}, {n2, v2}, {n3, v3}}
		for _, fam := range Families {
			r, err := Parse(status, h, Options{Family: fam, Now: now})
			if err != nil {
				var e *Error
				var m *Mismatch
				if !errors.As(err, &e) && !errors.As(err, &m) {
					t.Fatalf("untyped error %v", err)
				}
				continue
			}
			if r.Limit < 0 || r.Remaining < 0 || r.Used < 0 || r.Reset < 0 || r.RetryAfter < 0 || r.Window < 0 {
				t.Fatalf("negative reading %+v", r)
			}
			if r.Limit > MaxCount || r.Remaining > MaxCount || r.Used > MaxCount || r.Reset > MaxWait || r.RetryAfter > MaxWait || r.Window > MaxWait {
				t.Fatalf("reading out of bounds %+v", r)
			}
			if r.HasLimit && r.HasRemaining && r.Remaining > r.Limit {
				t.Fatalf("remaining above limit %+v", r)
			}
			if r.HasRetryAfter && (!r.Refused() || r.RetryAfter < time.Second) {
				t.Fatalf("retry-after %+v", r)
			}
		}
	})
}
