package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
)

// fakeAIKey is the key the consoles are started with; the fake provider
// refuses any other.
const fakeAIKey = "sk-harness-fake-provider"

// fakeAI is a stand-in for OpenAI's Responses API that the consoles'
// GATE_AI_OPENAI_BASE_URL points at, so the browser tests drive the AI
// agent end to end without reaching a real provider. It answers a message
// naming a graph ("… graph NAME …") with a one-node draft for the selected
// application (the same draft again when Gate's rejection comes back for
// the one repair), and anything else with a clarifying question. Calls counts
// every call (GET /calls).
type fakeAI struct {
	srv   *http.Server
	url   string
	calls atomic.Int64
}

var graphWord = regexp.MustCompile(`\bgraph ([a-z0-9][a-z0-9-]{0,40})\b`)
var perSecond = regexp.MustCompile(`\b([0-9]{1,6}) per second\b`)

func startFakeAI() (*fakeAI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &fakeAI{url: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /calls", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%d", f.calls.Load())
	})
	mux.HandleFunc("POST /v1/responses", f.respond)
	f.srv = &http.Server{Handler: mux}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

func (f *fakeAI) respond(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	if r.Header.Get("Authorization") != "Bearer "+fakeAIKey {
		http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
		return
	}
	var req struct {
		Store *bool `json:"store"`
		Input []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"input"`
	}
	b, _ := io.ReadAll(r.Body)
	if json.Unmarshal(b, &req) != nil || req.Store == nil || *req.Store || len(req.Input) < 2 {
		http.Error(w, `{"error":{"message":"unexpected request"}}`, http.StatusBadRequest)
		return
	}
	var ctx struct {
		SelectedApplication string `json:"selectedApplication"`
	}
	first := req.Input[0].Content
	if i := strings.Index(first, "{"); i >= 0 {
		_ = json.Unmarshal([]byte(first[i:]), &ctx)
	}
	// The operator's last message: a repair turn (Gate's rejection) is
	// answered like the request it repairs, so a draft Gate refuses is
	// refused again.
	last := ""
	for _, in := range req.Input[1:] {
		if in.Role == "user" && !strings.HasPrefix(in.Content, "Gate rejected") {
			last = in.Content
		}
	}
	reply := map[string]any{"message": "Which queue does the work arrive on, and what limit should Gate enforce?", "assumptions": []string{}, "configuration": nil}
	if m := graphWord.FindStringSubmatch(last); m != nil && ctx.SelectedApplication != "" {
		count := "20"
		if c := perSecond.FindStringSubmatch(last); c != nil {
			count = c[1]
		}
		app, name := ctx.SelectedApplication, m[1]
		doc := fmt.Sprintf(`{"application":%q,"graph":%q,"version":1,"counters":{"windowSeconds":60},"nodes":{"limit":{"ingress":true,"cost":1,"budgets":[{"id":"global","count":%s,"timeMs":1000,"confidence":"assumed"}],"egress":%q}},"paths":[{"name":"main","nodes":["limit"]}]}`,
			app, name, count, app+"."+name+".out")
		reply = map[string]any{
			"message":       fmt.Sprintf("Here is a one-node draft for %s/%s limited to %s per second.", app, name, count),
			"assumptions":   []string{"Each item costs 1.", "Gate owns the incoming queue (HTTP push available)."},
			"configuration": doc,
		}
	}
	text, _ := json.Marshal(reply)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "resp_fake", "object": "response", "created_at": 1, "status": "completed", "model": "fake",
		"output": []any{map[string]any{"type": "message", "id": "msg_fake", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": string(text), "annotations": []any{}}}}},
	})
}
