package httpapi

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/wire"
)

// The If-Match / If-None-Match grammar of RFC 9110: "*", or a list of
// quoted (optionally weak) tags over one or several lines with empty
// elements allowed; anything else, and the date preconditions, is a 400
// naming the header.
func TestReadPreconditions(t *testing.T) {
	t.Parallel()
	type want struct {
		ifMatch, ifMatchAny bool
		ifMatchTags         []string
		ifNone, ifNoneAny   bool
		ifNoneTags          []string
	}
	ok := []struct {
		name   string
		header http.Header
		want   want
	}{
		{"none", http.Header{}, want{}},
		{"if-match star", http.Header{"If-Match": {"*"}}, want{ifMatch: true, ifMatchAny: true}},
		{"if-match one", http.Header{"If-Match": {`"abc"`}}, want{ifMatch: true, ifMatchTags: []string{`"abc"`}}},
		{"if-match list, spaces, empty elements", http.Header{"If-Match": {` "a" ,, W/"b",`}}, want{ifMatch: true, ifMatchTags: []string{`"a"`, `W/"b"`}}},
		{"if-match over two lines", http.Header{"If-Match": {`"a"`, `"b"`}}, want{ifMatch: true, ifMatchTags: []string{`"a"`, `"b"`}}},
		{"empty tag", http.Header{"If-Match": {`""`}}, want{ifMatch: true, ifMatchTags: []string{`""`}}},
		{"if-none-match star", http.Header{"If-None-Match": {"*"}}, want{ifNone: true, ifNoneAny: true}},
		{"both", http.Header{"If-Match": {`"x"`}, "If-None-Match": {`W/"y"`}}, want{ifMatch: true, ifMatchTags: []string{`"x"`}, ifNone: true, ifNoneTags: []string{`W/"y"`}}},
		{"a comma inside a tag is not a separator", http.Header{"If-Match": {`"a,b"`}}, want{ifMatch: true, ifMatchTags: []string{`"a,b"`}}},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			p, bad := ReadPreconditions(tc.header)
			if bad != nil {
				t.Fatalf("refused: %v", bad)
			}
			got := want{p.IfMatch, p.IfMatchAny, p.IfMatchTags, p.IfNoneMatch, p.IfNoneMatchAny, p.IfNoneMatchTags}
			if got.ifMatch != tc.want.ifMatch || got.ifMatchAny != tc.want.ifMatchAny || !slices.Equal(got.ifMatchTags, tc.want.ifMatchTags) ||
				got.ifNone != tc.want.ifNone || got.ifNoneAny != tc.want.ifNoneAny || !slices.Equal(got.ifNoneTags, tc.want.ifNoneTags) {
				t.Fatalf("read %+v, want %+v", got, tc.want)
			}
		})
	}
	bad := []struct {
		name, field string
		header      http.Header
		says        string
	}{
		{"unquoted", "If-Match", http.Header{"If-Match": {"abc"}}, "not an entity tag"},
		{"unterminated", "If-Match", http.Header{"If-Match": {`"abc`}}, "not an entity tag"},
		{"lower-case weak prefix", "If-None-Match", http.Header{"If-None-Match": {`w/"abc"`}}, "not an entity tag"},
		{"space inside", "If-Match", http.Header{"If-Match": {`"a b"`}}, "not an entity tag"},
		{"control character", "If-Match", http.Header{"If-Match": {"\"a\x01\""}}, "not an entity tag"},
		{"no separator", "If-Match", http.Header{"If-Match": {`"a" "b"`}}, "separated by commas"},
		{"star and tag", "If-None-Match", http.Header{"If-None-Match": {`*, "a"`}}, "mixes *"},
		{"star followed by junk", "If-Match", http.Header{"If-Match": {`*x`}}, "separated by commas"},
		{"empty", "If-Match", http.Header{"If-Match": {""}}, "is empty"},
		{"only commas", "If-None-Match", http.Header{"If-None-Match": {" , ,"}}, "is empty"},
		{"too many tags", "If-Match", http.Header{"If-Match": {strings.Repeat(`"a",`, MaxPreconditionTags+1)}}, "more than 64"},
		{"too long", "If-Match", http.Header{"If-Match": {`"` + strings.Repeat("a", MaxPreconditionBytes) + `"`}}, "over the 4096"},
		{"too long over lines", "If-None-Match", http.Header{"If-None-Match": {`"` + strings.Repeat("a", 3000) + `"`, `"` + strings.Repeat("b", 3000) + `"`}}, "over the 4096"},
		{"if-unmodified-since", "If-Unmodified-Since", http.Header{"If-Unmodified-Since": {"Tue, 01 Dec 2026 10:00:00 GMT"}}, "not evaluated"},
		{"if-modified-since", "If-Modified-Since", http.Header{"If-Modified-Since": {"Tue, 01 Dec 2026 10:00:00 GMT"}}, "not evaluated"},
		{"if-range", "If-Range", http.Header{"If-Range": {`"a"`}}, "not evaluated"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, e := ReadPreconditions(tc.header)
			if e == nil {
				t.Fatalf("%v accepted", tc.header)
			}
			if e.Status() != http.StatusBadRequest || e.Code() != wire.CodeInvalidPrecondition || e.Body().Field != tc.field ||
				!strings.Contains(e.Message(), tc.says) || !strings.Contains(e.Message(), tc.field) {
				t.Fatalf("refusal %d %s field %q: %s; want 400 invalid-precondition naming %s and saying %q", e.Status(), e.Code(), e.Body().Field, e.Message(), tc.field, tc.says)
			}
		})
	}
}

// Evaluation follows RFC 9110 §13.2.2: If-Match compares strongly and
// fails on a missing resource, If-None-Match compares weakly and "*"
// fails on an existing one.
func TestPreconditionsEvaluate(t *testing.T) {
	t.Parallel()
	read := func(h http.Header) Preconditions {
		p, bad := ReadPreconditions(h)
		if bad != nil {
			t.Fatal(bad)
		}
		return p
	}
	cases := []struct {
		name    string
		header  http.Header
		current string
		want    Verdict
	}{
		{"nothing sent, missing", http.Header{}, "", Proceed},
		{"nothing sent, present", http.Header{}, `"a"`, Proceed},
		{"if-match equal", http.Header{"If-Match": {`"a"`}}, `"a"`, Proceed},
		{"if-match one of several", http.Header{"If-Match": {`"x", "a"`}}, `"a"`, Proceed},
		{"if-match other", http.Header{"If-Match": {`"b"`}}, `"a"`, FailedIfMatch},
		{"if-match weak never matches strongly", http.Header{"If-Match": {`W/"a"`}}, `"a"`, FailedIfMatch},
		{"if-match star, present", http.Header{"If-Match": {"*"}}, `"a"`, Proceed},
		{"if-match star, missing", http.Header{"If-Match": {"*"}}, "", FailedIfMatch},
		{"if-match tag, missing", http.Header{"If-Match": {`"a"`}}, "", FailedIfMatch},
		{"if-none-match star, missing: create", http.Header{"If-None-Match": {"*"}}, "", Proceed},
		{"if-none-match star, present", http.Header{"If-None-Match": {"*"}}, `"a"`, FailedIfNoneMatch},
		{"if-none-match equal", http.Header{"If-None-Match": {`"a"`}}, `"a"`, FailedIfNoneMatch},
		{"if-none-match weak equal", http.Header{"If-None-Match": {`W/"a"`}}, `"a"`, FailedIfNoneMatch},
		{"if-none-match other", http.Header{"If-None-Match": {`"b"`}}, `"a"`, Proceed},
		{"if-match holds, then if-none-match fails", http.Header{"If-Match": {`"a"`}, "If-None-Match": {`"a"`}}, `"a"`, FailedIfNoneMatch},
		{"if-match fails first", http.Header{"If-Match": {`"b"`}, "If-None-Match": {"*"}}, `"a"`, FailedIfMatch},
	}
	for _, tc := range cases {
		if got := read(tc.header).Evaluate(tc.current); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if !read(http.Header{"If-Match": {`W/"a", W/"b"`}}).SentWeak() || read(http.Header{"If-Match": {`W/"a", "b"`}}).SentWeak() || read(http.Header{"If-Match": {"*"}}).SentWeak() {
		t.Error("SentWeak does not say whether If-Match listed only weak tags")
	}
}

// Any header value either reads as "*" or a list of entity tags that each
// match the grammar (and compare equal to themselves), or is refused as a
// 400 naming the header; none panics.
func FuzzReadPreconditions(f *testing.F) {
	for _, s := range []string{"*", `"a"`, `W/"a", "b"`, ` , "x" ,`, `*, "a"`, `"a`, "abc", `W/"`, "\"\x80\xff\"", ""} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, ifMatch, ifNoneMatch string) {
		p, bad := ReadPreconditions(http.Header{"If-Match": {ifMatch}, "If-None-Match": {ifNoneMatch}})
		if bad != nil {
			if bad.Status() != http.StatusBadRequest || bad.Code() != wire.CodeInvalidPrecondition || (bad.Body().Field != "If-Match" && bad.Body().Field != "If-None-Match") {
				t.Fatalf("refusal %d %s field %q", bad.Status(), bad.Code(), bad.Body().Field)
			}
			return
		}
		for _, tags := range [][]string{p.IfMatchTags, p.IfNoneMatchTags} {
			if len(tags) > MaxPreconditionTags {
				t.Fatalf("%d tags read", len(tags))
			}
			for _, tag := range tags {
				if entityTagLen(tag) != len(tag) {
					t.Fatalf("tag %q read from %q / %q is not one entity tag", tag, ifMatch, ifNoneMatch)
				}
				if !strings.HasPrefix(tag, "W/") && p.IfMatch && !p.IfMatchAny && p.Evaluate(tag) == FailedIfMatch && contains(p.IfMatchTags, tag) {
					t.Fatalf("If-Match %q does not match its own strong tag %q", ifMatch, tag)
				}
			}
		}
		if p.IfMatchAny && len(p.IfMatchTags) > 0 || p.IfNoneMatchAny && len(p.IfNoneMatchTags) > 0 {
			t.Fatalf("* read beside tags: %+v", p)
		}
	})
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }
