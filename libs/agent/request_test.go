package agent

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/knob"
	"github.com/queen-mq/gate/libs/wire"
)

var update = flag.Bool("update", false, "rewrite the golden request bodies")

// conversation is a refinement: a draft in hand, three turns.
func conversation() wire.AIChatRequest {
	return wire.AIChatRequest{
		Application: "demo",
		Messages: []wire.AIMessage{
			{Role: "user", Content: "Limit SMS to 50 per second."},
			{Role: "assistant", Content: "Here is a draft with Gate-owned ingress."},
			{Role: "user", Content: "Make it 60 per second."},
		},
		Draft: json.RawMessage(validDraft),
	}
}

// golden compares a request body with testdata/name, the system prompt
// replaced by a marker after checking it is the whole prompt.
func golden(t *testing.T, name string, body []byte, prompt func(map[string]any) any) {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("the request body is not JSON: %v", err)
	}
	if p := prompt(v); p != SystemPrompt {
		t.Fatalf("the request does not carry the system prompt as its instructions")
	}
	got, _ := json.MarshalIndent(v, "", "  ")
	got = append(got, '\n')
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGoldenRequests -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("request body differs from %s:\n%s", path, got)
	}
}

// TestGoldenRequests is §7.3: what each adapter sends, byte for byte in
// meaning — model, store false, the output bound, the strict schema, the
// context turn and the conversation, and nothing else; the key only in
// its header.
func TestGoldenRequests(t *testing.T) {
	t.Parallel()
	t.Run("openai", func(t *testing.T) {
		t.Parallel()
		c := oneRequest(t, knob.AIProviderOpenAI, conversation(), func(c *Config) { c.AI.WatchAvailable = false })
		if c.Method != http.MethodPost || c.Path != "/v1/responses" || c.RawQuery != "" {
			t.Errorf("%s %s?%s, want POST /v1/responses", c.Method, c.Path, c.RawQuery)
		}
		if got := c.Header.Get("Authorization"); got != "Bearer "+testKey {
			t.Errorf("Authorization %q", got)
		}
		for _, h := range []string{"Openai-Organization", "Openai-Project"} {
			if c.Header.Get(h) != "" {
				t.Errorf("header %s sent", h)
			}
		}
		// prompt returns the instructions and puts a marker in their place.
		golden(t, "openai-request.golden.json", c.Body, func(v map[string]any) any {
			p := v["instructions"]
			v["instructions"] = "<SystemPrompt>"
			return p
		})
	})
	t.Run("gemini", func(t *testing.T) {
		t.Parallel()
		c := oneRequest(t, knob.AIProviderGemini, conversation(), func(c *Config) { c.AI.WatchAvailable = false })
		if c.Method != http.MethodPost || c.Path != "/v1beta/models/gemini-3.8-flash:generateContent" {
			t.Errorf("%s %s, want POST /v1beta/models/gemini-3.8-flash:generateContent", c.Method, c.Path)
		}
		if c.RawQuery != "" || strings.Contains(c.Path+c.RawQuery, testKey) {
			t.Errorf("the key or a query is in the URL: %s?%s", c.Path, c.RawQuery)
		}
		if got := c.Header.Get("X-Goog-Api-Key"); got != testKey {
			t.Errorf("x-goog-api-key %q", got)
		}
		if c.Header.Get("Authorization") != "" {
			t.Errorf("an Authorization header was sent")
		}
		golden(t, "gemini-request.golden.json", c.Body, func(v map[string]any) any {
			si, _ := v["systemInstruction"].(map[string]any)
			parts, _ := si["parts"].([]any)
			if len(parts) != 1 {
				return nil
			}
			part, _ := parts[0].(map[string]any)
			p := part["text"]
			part["text"] = "<SystemPrompt>"
			return p
		})
	})
}

// The repair turn names no graph but the draft's own: every rule sentence
// that names another graph (and its node) says "another graph" instead.
func TestRedactOtherGraphs(t *testing.T) {
	cases := []struct{ in, want string }{
		{`[ingress-owner] queue "q" is already the ingress of node "api" of graph acme/secret-proj, declared on another replica: use another queue`,
			`[ingress-owner] queue "q" is already the ingress of a node of another graph, declared on another replica: use another queue`},
		{`[gate-queue] node "a"'s egress is "gate.acme.pay.api.in", the Gate-owned ingress queue of node "api" of graph acme/pay: declare`,
			`[gate-queue] node "a"'s egress is "gate.acme.pay.api.in", the Gate-owned ingress queue of a node of another graph: declare`},
		{`[shared-conflict-graph] … in node "x" (budget "b") of graph shop/other: make them agree; [graph-exists] a graph named "orders" already exists`,
			`[shared-conflict-graph] … in node "x" (budget "b") of another graph: make them agree; [graph-exists] a graph named "orders" already exists`},
		{`node "n" of graph shop/orders is this draft`, `node "n" of graph shop/orders is this draft`},
	}
	for _, c := range cases {
		if got := redactOtherGraphs(c.in, "shop", "orders"); got != c.want {
			t.Errorf("redactOtherGraphs(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}
