package vendormeter

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The IETF fields (draft-ietf-httpapi-ratelimit-headers, versions 08 on)
// are Structured Field lists (RFC 9651) whose members name a policy:
//
//	RateLimit-Policy: "default";q=100;w=60, "daily";q=5000;w=86400
//	RateLimit: "default";r=42;t=17
//
// q is the quota (required), w the window in seconds, r what remains and
// t the seconds until the quota refills (both required in RateLimit). The
// member names a policy as a String or a Token. The mirrored policy is
// Options.Name, else the first member of RateLimit.

// sfItem is one list member: its bare value (a String or Token name) and
// its parameters.
type sfItem struct {
	name   string
	params []sfParam
}

type sfParam struct {
	key string
	// kind: 'i' integer, 'd' decimal, 's' string, 't' token, 'b' bytes,
	// '?' boolean.
	kind byte
	num  int64
	text string
}

func (it sfItem) param(k string) (sfParam, bool) {
	for _, p := range it.params {
		if p.key == k {
			return p, true
		}
	}
	return sfParam{}, false
}

// sfList parses a Structured Field list of items whose bare values are
// Strings or Tokens. Inner lists, and any other bare item, are refused.
func sfList(name, v string) ([]sfItem, error) {
	p := &sfParser{s: v, name: name}
	var out []sfItem
	p.ows()
	if p.done() {
		return nil, bad(name, "is empty: expected a list like \"default\";q=100;w=60")
	}
	for {
		if len(out) == MaxPolicies {
			return nil, bad(name, "names more than %d policies", MaxPolicies)
		}
		it, err := p.item()
		if err != nil {
			return nil, err
		}
		out = append(out, it)
		p.ows()
		if p.done() {
			return out, nil
		}
		if p.s[p.i] != ',' {
			return nil, p.fail("expected ',' between members")
		}
		p.i++
		p.ows()
		if p.done() {
			return nil, p.fail("a trailing ',' ends the list")
		}
	}
}

type sfParser struct {
	s, name string
	i       int
}

func (p *sfParser) done() bool { return p.i >= len(p.s) }

func (p *sfParser) ows() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *sfParser) fail(what string) error {
	return bad(p.name, "%s at byte %d of %q (a Structured Field list like \"default\";r=10;t=1)", what, p.i, clip(p.s))
}

func (p *sfParser) item() (sfItem, error) {
	if p.done() {
		return sfItem{}, p.fail("expected a policy name")
	}
	var it sfItem
	switch c := p.s[p.i]; {
	case c == '"':
		s, err := p.str()
		if err != nil {
			return sfItem{}, err
		}
		it.name = s
	case isAlpha(c) || c == '*':
		it.name = p.tok()
	case c == '(':
		return sfItem{}, p.fail("an inner list is not a policy")
	default:
		return sfItem{}, p.fail("a policy name must be a String or a Token")
	}
	for !p.done() && p.s[p.i] == ';' {
		p.i++
		p.ows()
		pr, err := p.param()
		if err != nil {
			return sfItem{}, err
		}
		for j := range it.params {
			if it.params[j].key == pr.key { // RFC 9651: the last one wins
				it.params = append(it.params[:j], it.params[j+1:]...)
				break
			}
		}
		if len(it.params) == 16 {
			return sfItem{}, p.fail("more than 16 parameters")
		}
		it.params = append(it.params, pr)
	}
	return it, nil
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isLC(c byte) bool    { return c >= 'a' && c <= 'z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (p *sfParser) tok() string {
	start := p.i
	p.i++
	for !p.done() {
		c := p.s[p.i]
		if isAlpha(c) || isDigit(c) || c == ':' || c == '/' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			p.i++
			continue
		}
		break
	}
	return p.s[start:p.i]
}

func (p *sfParser) str() (string, error) {
	p.i++ // the opening quote
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\':
			if p.done() || (p.s[p.i] != '"' && p.s[p.i] != '\\') {
				return "", p.fail("a String escapes only '\"' and '\\'")
			}
			b.WriteByte(p.s[p.i])
			p.i++
		case c == '"':
			return b.String(), nil
		case c < 0x20 || c > 0x7e:
			return "", p.fail("a String holds only printable ASCII")
		default:
			b.WriteByte(c)
		}
	}
	return "", p.fail("a String is not closed")
}

func (p *sfParser) param() (sfParam, error) {
	if p.done() || !(isLC(p.s[p.i]) || p.s[p.i] == '*') {
		return sfParam{}, p.fail("a parameter key starts with a lowercase letter or '*'")
	}
	start := p.i
	for !p.done() {
		c := p.s[p.i]
		if isLC(c) || isDigit(c) || c == '_' || c == '-' || c == '.' || c == '*' {
			p.i++
			continue
		}
		break
	}
	pr := sfParam{key: p.s[start:p.i], kind: '?', num: 1}
	if p.done() || p.s[p.i] != '=' {
		return pr, nil
	}
	p.i++
	if p.done() {
		return sfParam{}, p.fail("a parameter has '=' and no value")
	}
	switch c := p.s[p.i]; {
	case c == '-' || isDigit(c):
		return p.number(pr)
	case c == '"':
		s, err := p.str()
		pr.kind, pr.text = 's', s
		return pr, err
	case isAlpha(c) || c == '*':
		pr.kind, pr.text = 't', p.tok()
		return pr, nil
	case c == ':':
		end := strings.IndexByte(p.s[p.i+1:], ':')
		if end < 0 {
			return sfParam{}, p.fail("a Byte Sequence is not closed")
		}
		pr.kind, pr.text = 'b', p.s[p.i+1:p.i+1+end]
		p.i += end + 2
		return pr, nil
	case c == '?':
		if p.i+1 >= len(p.s) || (p.s[p.i+1] != '0' && p.s[p.i+1] != '1') {
			return sfParam{}, p.fail("a Boolean is ?0 or ?1")
		}
		pr.kind, pr.num = '?', int64(p.s[p.i+1]-'0')
		p.i += 2
		return pr, nil
	}
	return sfParam{}, p.fail("unknown parameter value")
}

// number reads an Integer (at most 15 digits) or a Decimal (12.3 digits).
func (p *sfParser) number(pr sfParam) (sfParam, error) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	digitsStart, dot := p.i, -1
	for !p.done() {
		c := p.s[p.i]
		if isDigit(c) {
			p.i++
			continue
		}
		if c == '.' && dot < 0 {
			dot = p.i
			p.i++
			continue
		}
		break
	}
	lit := p.s[start:p.i]
	if p.i == digitsStart || (dot >= 0 && (dot == digitsStart || dot == p.i-1)) {
		return sfParam{}, p.fail(fmt.Sprintf("%q is not a number", lit))
	}
	if dot < 0 {
		if p.i-digitsStart > 15 {
			return sfParam{}, p.fail(fmt.Sprintf("the Integer %q has more than 15 digits", clip(lit)))
		}
		n, _ := strconv.ParseInt(lit, 10, 64)
		pr.kind, pr.num = 'i', n
		return pr, nil
	}
	if dot-digitsStart > 12 || p.i-dot-1 > 3 {
		return sfParam{}, p.fail(fmt.Sprintf("the Decimal %q has more than 12.3 digits", lit))
	}
	pr.kind, pr.text = 'd', lit
	return pr, nil
}

// ietfCount reads a parameter that must be a non-negative Integer.
func ietfCount(field, policy string, it sfItem, key string, required bool) (int64, bool, error) {
	pr, ok := it.param(key)
	if !ok {
		if required {
			return 0, false, bad(field, "policy %q has no %s= parameter", policy, key)
		}
		return 0, false, nil
	}
	if pr.kind != 'i' {
		return 0, false, bad(field, "policy %q: %s= must be an Integer", policy, key)
	}
	if pr.num < 0 {
		return 0, false, bad(field, "policy %q: %s=%d is negative", policy, key, pr.num)
	}
	if pr.num > MaxCount {
		return 0, false, bad(field, "policy %q: %s=%d is over %d", policy, key, pr.num, int64(MaxCount))
	}
	return pr.num, true, nil
}

// pick returns the member named want, or the first when want is "".
func pick(items []sfItem, want string) (sfItem, bool) {
	if want == "" {
		return items[0], true
	}
	for _, it := range items {
		if it.name == want {
			return it, true
		}
	}
	return sfItem{}, false
}

func ietf(ix index, o Options, r *Reading) error {
	var policyName string
	if e, ok := ix["ratelimit"]; ok {
		items, err := sfList(e.name, e.value)
		if err != nil {
			return err
		}
		it, found := pick(items, o.Name)
		if !found {
			return &Mismatch{Header: e.name, Want: o.Name, Got: items[0].name}
		}
		policyName = it.name
		rem, _, err := ietfCount(e.name, it.name, it, "r", true)
		if err != nil {
			return err
		}
		t, _, err := ietfCount(e.name, it.name, it, "t", true)
		if err != nil {
			return err
		}
		if time.Duration(t)*time.Second > MaxWait {
			return bad(e.name, "policy %q: t=%d seconds is over %s", it.name, t, MaxWait)
		}
		r.Remaining, r.HasRemaining = rem, true
		r.Reset, r.HasReset, r.ResetRule = time.Duration(t)*time.Second, true, ResetDelta
		r.Policy = it.name
	}
	if e, ok := ix["ratelimit-policy"]; ok {
		items, err := sfList(e.name, e.value)
		if err != nil {
			return err
		}
		want := o.Name
		if want == "" {
			want = policyName
		}
		it, found := pick(items, want)
		if !found {
			if o.Name != "" {
				return &Mismatch{Header: e.name, Want: o.Name, Got: items[0].name}
			}
			return bad(e.name, "names no policy %q, which RateLimit reports", want)
		}
		q, _, err := ietfCount(e.name, it.name, it, "q", true)
		if err != nil {
			return err
		}
		w, hasW, err := ietfCount(e.name, it.name, it, "w", false)
		if err != nil {
			return err
		}
		if hasW {
			if w == 0 || time.Duration(w)*time.Second > MaxWait {
				return bad(e.name, "policy %q: w=%d must be 1 to %d seconds", it.name, w, int64(MaxWait/time.Second))
			}
			r.Window, r.HasWindow = time.Duration(w)*time.Second, true
		}
		r.Limit, r.HasLimit = q, true
		r.Policy = it.name
		if r.HasRemaining && r.Remaining > r.Limit {
			return bad(ix["ratelimit"].name, "policy %q: r=%d is above its quota q=%d", it.name, r.Remaining, r.Limit)
		}
	}
	return nil
}
