package agent

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/queen-mq/gate/libs/wire"
)

// FuzzParseReply: any provider text is either a bounded reply or a 502
// naming the problem; it never panics.
func FuzzParseReply(f *testing.F) {
	f.Add(replyText("hi", []string{"a"}, ptr(validDraft)))
	f.Add(replyText("hi", nil, nil))
	f.Add(`{"message":"x","assumptions":null,"configuration":null}`)
	f.Add(`[]`)
	f.Add(`{"message":"x","assumptions":[],"configuration":7,"extra":1}`)
	f.Fuzz(func(t *testing.T, text string) {
		r, bad := parseReply(text)
		if bad != nil {
			if bad.Status != http.StatusBadGateway || bad.Message == "" {
				t.Fatalf("%+v", bad)
			}
			return
		}
		if r.Message == "" || len(r.Message) > MaxReplyMessageBytes || len(r.Assumptions) > MaxAssumptions || r.Assumptions == nil {
			t.Fatalf("an out-of-bounds reply was accepted: %+v", r)
		}
		if r.Configuration != nil {
			validateDraft(*r.Configuration, "demo", true, emptyEnv())
		}
	})
}

// FuzzCheckRequest: any chat body is accepted within the bounds or
// refused with a 422 naming a field.
func FuzzCheckRequest(f *testing.F) {
	f.Add(`{"application":"demo","messages":[{"role":"user","content":"hi"}]}`)
	f.Add(`{"application":"demo","messages":[{"role":"user","content":"hi"}],"draft":` + validDraft + `}`)
	f.Add(`{"application":"demo","messages":[{"role":"assistant","content":""}],"draft":{"nodes":1}}`)
	f.Fuzz(func(t *testing.T, body string) {
		var req wire.AIChatRequest
		if json.Unmarshal([]byte(body), &req) != nil {
			return
		}
		draft, bad := checkRequest(req)
		if bad != nil {
			if bad.Status != http.StatusUnprocessableEntity || bad.Field == "" {
				t.Fatalf("%+v", bad)
			}
			return
		}
		if len(req.Messages) < 1 || len(req.Messages) > MaxMessages || len(draft) > MaxDraftBytes {
			t.Fatalf("an out-of-bounds request was accepted")
		}
	})
}
