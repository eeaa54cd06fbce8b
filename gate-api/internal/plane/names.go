package plane

import (
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/wire"
)

// maxName is the longest application, graph, node or path name.
const maxName = 63

// NameProblem says why s fails Gate's name rule (1–63 bytes of [a-z0-9-],
// starting with a letter or digit), or "" when it passes.
func NameProblem(s string) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > maxName:
		return fmt.Sprintf("is %d bytes long, over %d", len(s), maxName)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0:
		default:
			return fmt.Sprintf("has %s at byte %d", describeByte(s, i), i)
		}
	}
	return ""
}

func describeByte(s string, i int) string {
	c := s[i]
	switch {
	case c == '/':
		return "a slash"
	case c == '.':
		return "a dot"
	case c == ' ':
		return "a space"
	case c < 0x20 || c == 0x7f:
		return fmt.Sprintf("the control character 0x%02x", c)
	case c == '-':
		return "a leading dash"
	case c >= 'A' && c <= 'Z':
		return fmt.Sprintf("the capital %q", c)
	case c >= 0x80:
		r, _ := utf8.DecodeRuneInString(s[i:])
		return "the non-ASCII " + strconv.QuoteRune(r)
	}
	return fmt.Sprintf("%q", c)
}

// CheckName refuses a route name that can never name anything Gate
// declared, with a 400 naming the URL segment.
func CheckName(field, value string) *httpapi.Refusal {
	p := NameProblem(value)
	if p == "" {
		return nil
	}
	shown := value
	if len(shown) > 80 {
		shown = shown[:80] + "…"
	}
	return httpapi.Refuse(http.StatusBadRequest, wire.CodeInvalidName, "the %s name %q in the URL %s: names are 1–63 bytes of a-z, 0-9 and '-', starting with a letter or digit", field, shown, p).Field(field)
}

// CheckText refuses a free-text value longer than max bytes or carrying
// control characters, naming the field.
func CheckText(field, value string, max int) *httpapi.Refusal {
	if len(value) > max {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidField, "%s is %d bytes long, over the limit of %d: shorten it", field, len(value), max).Field(field)
	}
	for i := 0; i < len(value); i++ {
		if c := value[i]; c < 0x20 || c == 0x7f {
			return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidField, "%s has the control character 0x%02x at byte %d: remove it", field, c, i).Field(field)
		}
	}
	return nil
}
