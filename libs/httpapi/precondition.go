package httpapi

import (
	"net/http"
	"strings"

	"github.com/queen-mq/gate/libs/wire"
)

// Preconditions are a request's If-Match and If-None-Match (RFC 9110
// §13.1.1, §13.1.2), read by ReadPreconditions. The zero value is a request
// without either: every evaluation passes.
type Preconditions struct {
	// IfMatch is true when If-Match was sent; IfMatchAny when it was "*";
	// IfMatchTags the entity tags it listed otherwise, as sent (quotes
	// and a W/ prefix included).
	IfMatch     bool
	IfMatchAny  bool
	IfMatchTags []string
	// IfNoneMatch, IfNoneMatchAny and IfNoneMatchTags are the same for
	// If-None-Match.
	IfNoneMatch     bool
	IfNoneMatchAny  bool
	IfNoneMatchTags []string
}

// Any reports whether the request carries a precondition.
func (p Preconditions) Any() bool { return p.IfMatch || p.IfNoneMatch }

// The bounds of a precondition header: more tags, or a longer field, is
// refused rather than compared (a list of 10,000 tags is not a request a
// client means).
const (
	// MaxPreconditionTags is the most entity tags one header may list.
	MaxPreconditionTags = 64
	// MaxPreconditionBytes is the longest one header may be, all its lines
	// together.
	MaxPreconditionBytes = 4096
)

// unsupportedPreconditions are the precondition headers of RFC 9110 the
// graph routes do not evaluate: a stored document has an entity tag and no
// modification date Gate vouches for, and no route serves ranges. Ignoring
// them would let a client believe a write was conditional that was not, so
// they are refused by name.
var unsupportedPreconditions = []string{"If-Unmodified-Since", "If-Modified-Since", "If-Range"}

// ReadPreconditions reads a request's If-Match and If-None-Match. Each is
// "*" or a comma-separated list of entity tags (`"xyz"` or `W/"xyz"`),
// possibly over several header lines; empty list elements are allowed, as
// RFC 9110 §5.6.1 asks. A header of another form, "*" beside a tag, more
// than MaxPreconditionTags tags or more than MaxPreconditionBytes bytes, or
// any of If-Unmodified-Since, If-Modified-Since and If-Range, is a 400
// invalid-precondition naming the header and the fix.
func ReadPreconditions(h http.Header) (Preconditions, *Refusal) {
	var p Preconditions
	for _, name := range unsupportedPreconditions {
		if _, ok := h[name]; ok {
			return p, Refuse(http.StatusBadRequest, wire.CodeInvalidPrecondition, "%s is not evaluated on this route: a graph's stored document is identified by its entity tag, not a date; send If-Match with the ETag of a GET or PUT answer (or If-None-Match: * to create only), and leave %s out", name, name).Field(name)
		}
	}
	var bad *Refusal
	p.IfMatch, p.IfMatchAny, p.IfMatchTags, bad = readTagList(h, "If-Match")
	if bad != nil {
		return Preconditions{}, bad
	}
	p.IfNoneMatch, p.IfNoneMatchAny, p.IfNoneMatchTags, bad = readTagList(h, "If-None-Match")
	if bad != nil {
		return Preconditions{}, bad
	}
	return p, nil
}

// readTagList reads one of If-Match / If-None-Match.
func readTagList(h http.Header, name string) (present, anyTag bool, tags []string, bad *Refusal) {
	lines, ok := h[name]
	if !ok {
		return false, false, nil, nil
	}
	refuse := func(format string, args ...any) *Refusal {
		return Refuse(http.StatusBadRequest, wire.CodeInvalidPrecondition, "%s "+format+": send %s: * or a comma-separated list of quoted entity tags, such as the ETag header of a GET or PUT answer (%s: \"3f2a…\")", append(append([]any{name}, args...), name, name)...).Field(name)
	}
	size := 0
	for _, l := range lines {
		size += len(l)
	}
	if size > MaxPreconditionBytes {
		return true, false, nil, refuse("is %d bytes, over the %d this route reads", size, MaxPreconditionBytes)
	}
	for _, line := range lines {
		rest := line
		for {
			rest = strings.TrimLeft(rest, " \t")
			if rest == "" {
				break
			}
			if rest[0] == ',' {
				rest = rest[1:]
				continue
			}
			if rest[0] == '*' {
				anyTag = true
				rest = rest[1:]
			} else {
				n := entityTagLen(rest)
				if n == 0 {
					return true, false, nil, refuse("holds %.40q, which is not an entity tag (a tag is quoted, optionally weak: \"x\" or W/\"x\", of visible characters other than '\"')", rest)
				}
				if len(tags) == MaxPreconditionTags {
					return true, false, nil, refuse("lists more than %d entity tags", MaxPreconditionTags)
				}
				tags = append(tags, rest[:n])
				rest = rest[n:]
			}
			rest = strings.TrimLeft(rest, " \t")
			if rest != "" && rest[0] != ',' {
				return true, false, nil, refuse("holds %.40q after an element: elements are separated by commas", rest)
			}
		}
	}
	switch {
	case anyTag && len(tags) > 0:
		return true, false, nil, refuse("mixes * with entity tags: * matches any stored document, so send it alone")
	case !anyTag && len(tags) == 0:
		return true, false, nil, refuse("is empty")
	}
	return true, anyTag, tags, nil
}

// entityTagLen is the length of the entity tag that s starts with
// (RFC 9110 §8.8.3: [ "W/" ] DQUOTE *etagc DQUOTE, etagc = %x21 / %x23-7E /
// obs-text), 0 when it does not start with one.
func entityTagLen(s string) int {
	i := 0
	if strings.HasPrefix(s, "W/") {
		i = 2
	}
	if i >= len(s) || s[i] != '"' {
		return 0
	}
	for j := i + 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '"':
			return j + 1
		case c == 0x21 || (c >= 0x23 && c <= 0x7e) || c >= 0x80:
		default:
			return 0
		}
	}
	return 0
}

// Verdict is the outcome of evaluating preconditions.
type Verdict int

// The verdicts of Preconditions.Evaluate.
const (
	// Proceed means every precondition holds (or none was sent).
	Proceed Verdict = iota
	// FailedIfMatch means If-Match did not match: answer 412.
	FailedIfMatch
	// FailedIfNoneMatch means If-None-Match matched: answer 304 to a GET
	// or HEAD, 412 to anything else.
	FailedIfNoneMatch
)

// Evaluate applies RFC 9110 §13.2.2 to the resource's current entity tag
// (current, with its quotes; "" when the resource does not exist):
// If-Match first, with the strong comparison (a weak tag never matches);
// then If-None-Match, with the weak comparison. "*" matches any current
// representation.
func (p Preconditions) Evaluate(current string) Verdict {
	if p.IfMatch {
		ok := current != "" && (p.IfMatchAny || strongMatch(p.IfMatchTags, current))
		if !ok {
			return FailedIfMatch
		}
	}
	if p.IfNoneMatch {
		if current != "" && (p.IfNoneMatchAny || weakMatch(p.IfNoneMatchTags, current)) {
			return FailedIfNoneMatch
		}
	}
	return Proceed
}

// strongMatch reports whether a strong tag of tags equals current (itself
// strong).
func strongMatch(tags []string, current string) bool {
	if strings.HasPrefix(current, "W/") {
		return false
	}
	for _, t := range tags {
		if t == current {
			return true
		}
	}
	return false
}

// weakMatch reports whether a tag of tags equals current once the W/
// prefixes are set aside.
func weakMatch(tags []string, current string) bool {
	c := strings.TrimPrefix(current, "W/")
	for _, t := range tags {
		if strings.TrimPrefix(t, "W/") == c {
			return true
		}
	}
	return false
}

// SentWeak reports whether If-Match listed only weak tags, which a strong
// comparison never matches: a 412 can say so.
func (p Preconditions) SentWeak() bool {
	if !p.IfMatch || p.IfMatchAny {
		return false
	}
	for _, t := range p.IfMatchTags {
		if !strings.HasPrefix(t, "W/") {
			return false
		}
	}
	return true
}
