package agent

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"strings"
)

//go:embed prompt.txt
var promptRules string

//go:embed examples/*.json
var examplesFS embed.FS

// Example is one worked example the system prompt teaches.
type Example struct {
	// Name is the graph name (and the file examples/{Name}.json).
	Name string
	// Request is the operator's request the example answers.
	Request string
	// Notes are the derived facts the prompt states beside it.
	Notes string
	// Body is the document, compact JSON.
	Body []byte
}

// exampleText are the four worked examples of the runtime spec §7.7, in
// order.
var exampleText = []struct{ name, request, notes string }{
	{"notifications", "Limit notifications to 100 per second.",
		"One node, Gate-owned ingress and cost 1 stated as assumptions."},
	{"partner-api", "Read demo.partner.in and send to demo.partner.out for partner-workers: 200 units per second, 6000 per minute, and at most 20 writes per second per account; an item costs payload.units, at most 5.",
		"The minute budget with 60 sub-windows is 100 per 1 s; account-writes counts only ops matching write.* per payload.accountId; the unscoped second and minute budgets stay as the global ceiling."},
	{"airbnb-example", "Prices, messages (from demo.messages.in) and photos share one egress IP limit of 1500 per 10 s and 300000 per hour; prices are most important, then messages, then photos; photo deletes are limited to 100 per listing per week; photos also go to an audit queue.",
		"ip short is 150 per 1 s: prices get 150, messages round(150 x 0.75) = 113, photos 75; ip hour is 5000 per 60 s; audit is visited only by photos, so its share is 1.0; listing-delete has one sub-window of 604800 s, and Gate warns window-head-of-line; the photos path fans out to ip and audit (both get every photo message)."},
	{"observe-provider", "Observe provider traffic for a day before choosing limits.",
		"Watch for 86400 s with budgets []; only when watchAvailable is true."},
}

// Examples returns the four worked examples, read from the embedded files
// the prompt quotes.
func Examples() []Example {
	out := make([]Example, 0, len(exampleText))
	for _, e := range exampleText {
		raw, err := examplesFS.ReadFile("examples/" + e.name + ".json")
		if err != nil {
			panic(fmt.Sprintf("agent: the embedded example %s is missing: %v", e.name, err))
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			panic(fmt.Sprintf("agent: the embedded example %s is not JSON: %v", e.name, err))
		}
		out = append(out, Example{Name: e.name, Request: e.request, Notes: e.notes, Body: buf.Bytes()})
	}
	return out
}

// SystemPrompt is the instructions every call sends: the rules and the
// four worked examples, each with the reply it deserves.
var SystemPrompt = buildPrompt()

func buildPrompt() string {
	var b strings.Builder
	b.WriteString(promptRules)
	for i, e := range Examples() {
		reply, _ := json.Marshal(struct {
			Message       string   `json:"message"`
			Assumptions   []string `json:"assumptions"`
			Configuration string   `json:"configuration"`
		}{"Here is a draft for " + e.Name + ". Review it in the editor before creating it.", []string{"The limits are the ones you gave, marked assumed."}, string(e.Body)})
		fmt.Fprintf(&b, "\n## Example %d: %s\nOperator: %s\nFacts: %s\nDocument: %s\nReply: %s\n", i+1, e.Name, e.Request, e.Notes, e.Body, reply)
	}
	return b.String()
}
