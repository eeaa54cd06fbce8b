package gatetest

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
)

// maxNamePart caps how much of the test name goes into a prefix, so that
// "<prefix>.<queue>" stays well under Queen's 63-byte names.
const maxNamePart = 24

// Prefix returns a name unique to this test run of t, made of the sanitised
// test name and a random suffix, e.g. "gt-semantic07-lease-3f9a2c1d". It uses
// only [a-z0-9-], starts with a letter and is at most 36 bytes, so it is valid
// as a Queen queue-name segment, a consumer-group segment, a KV namespace and a
// NATS subject token.
func Prefix(t testing.TB) string {
	return "gt-" + sanitise(t.Name(), '-') + "-" + randomHex(4)
}

// schemaName returns a PostgreSQL schema name unique to this run of t, made
// of [a-z0-9_] only, so it never needs quoting.
func schemaName(t testing.TB) string {
	return "gt_" + sanitise(t.Name(), '_') + "_" + randomHex(4)
}

// sanitise lowercases name, maps every byte outside [a-z0-9] to sep, collapses
// runs of sep, trims sep at both ends and caps the length. An empty result
// becomes "t".
func sanitise(name string, sep byte) string {
	var b strings.Builder
	lastSep := true
	for i := 0; i < len(name) && b.Len() < maxNamePart; i++ {
		c := name[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		default:
			c = sep
		}
		if c == sep {
			if lastSep {
				continue
			}
			lastSep = true
		} else {
			lastSep = false
		}
		b.WriteByte(c)
	}
	out := strings.Trim(b.String(), string(sep))
	if out == "" {
		return "t"
	}
	return out
}

func randomHex(n int) string {
	buf := make([]byte, n)
	if _, err := rand.Read(buf); err != nil {
		panic("gatetest: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(buf)
}
