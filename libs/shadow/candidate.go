package shadow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// MaxCandidateBytes bounds a candidate body.
const MaxCandidateBytes = 64 << 10

// ErrCandidate is wrapped by every refusal of a candidate's shape (the
// budgets themselves are judged by libs/declare after Merge).
var ErrCandidate = errors.New("shadow candidate refused")

// FieldError is a candidate refused for one field.
type FieldError struct {
	// Field is the candidate's JSON path, e.g. nodes.photos.
	Field string
	// Message says what is wrong and the fix.
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Unwrap makes errors.Is(err, ErrCandidate) hold.
func (e *FieldError) Unwrap() error { return ErrCandidate }

// Candidate is the budgets per node a shadow runs, each node's list raw
// as the document's own budget syntax.
type Candidate struct {
	Nodes map[string]json.RawMessage
}

// NodeNames are the candidate's nodes in name order.
func (c Candidate) NodeNames() []string {
	out := make([]string, 0, len(c.Nodes))
	for n := range c.Nodes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Marshal is the candidate's canonical body ({"nodes":{NODE:{"budgets":[…]}}}).
func (c Candidate) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString(`{"nodes":{`)
	for i, n := range c.NodeNames() {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(n)
		b.Write(k)
		b.WriteString(`:{"budgets":`)
		var compact bytes.Buffer
		if json.Compact(&compact, c.Nodes[n]) == nil {
			b.Write(compact.Bytes())
		} else {
			b.Write(c.Nodes[n])
		}
		b.WriteString(`}`)
	}
	b.WriteString(`}}`)
	return b.Bytes()
}

// ParseCandidate reads a candidate body strictly: one object with
// "nodes", each node an object with "budgets" (an array), nothing else;
// nodes must exist in known (the stored document's nodes; nil accepts any
// name, to read back a stored candidate).
func ParseCandidate(body []byte, known []string) (Candidate, error) {
	if len(body) > MaxCandidateBytes {
		return Candidate{}, &FieldError{Field: "body", Message: fmt.Sprintf("the candidate is %d bytes; at most %d are accepted: send only the nodes whose budgets change", len(body), MaxCandidateBytes)}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return Candidate{}, &FieldError{Field: "body", Message: `the candidate must be a JSON object {"nodes": {"NODE": {"budgets": [...]}}}` + errSuffix(err)}
	}
	for _, k := range sortedKeys(top) {
		if k != "nodes" {
			field := k
			if field == "" {
				field = "body"
			}
			return Candidate{}, &FieldError{Field: field, Message: fmt.Sprintf(`unknown field %q; a candidate has only "nodes": {"NODE": {"budgets": [...]}}`, k)}
		}
	}
	raw, ok := top["nodes"]
	if !ok {
		return Candidate{}, &FieldError{Field: "nodes", Message: `missing; give the budgets per node: {"nodes": {"NODE": {"budgets": [...]}}}`}
	}
	var nodes map[string]json.RawMessage
	if err := json.Unmarshal(raw, &nodes); err != nil || nodes == nil {
		return Candidate{}, &FieldError{Field: "nodes", Message: "must be an object keyed by node name" + errSuffix(err)}
	}
	if len(nodes) == 0 {
		return Candidate{}, &FieldError{Field: "nodes", Message: "is empty; name at least one node and its candidate budgets"}
	}
	c := Candidate{Nodes: map[string]json.RawMessage{}}
	for _, name := range sortedKeys(nodes) {
		v := nodes[name]
		field := "nodes." + name
		if known != nil && !contains(known, name) {
			return Candidate{}, &FieldError{Field: field, Message: fmt.Sprintf("the graph has no node %q; its nodes are %s", name, strings.Join(known, ", "))}
		}
		var n map[string]json.RawMessage
		if err := json.Unmarshal(v, &n); err != nil || n == nil {
			return Candidate{}, &FieldError{Field: field, Message: `must be an object {"budgets": [...]}` + errSuffix(err)}
		}
		for _, k := range sortedKeys(n) {
			if k != "budgets" {
				return Candidate{}, &FieldError{Field: field + "." + k, Message: `unknown field; a shadow changes only a node's "budgets"`}
			}
		}
		b, ok := n["budgets"]
		if !ok {
			return Candidate{}, &FieldError{Field: field + ".budgets", Message: "missing; give the node's candidate budgets (an array in the document's budget syntax)"}
		}
		var arr []json.RawMessage
		if err := json.Unmarshal(b, &arr); err != nil || arr == nil {
			return Candidate{}, &FieldError{Field: field + ".budgets", Message: "must be an array of budgets in the document's syntax" + errSuffix(err)}
		}
		c.Nodes[name] = b
	}
	return c, nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Merge returns doc with each candidate node's "budgets" replaced by the
// candidate's: the document libs/declare compiles for the shadow, and the
// document a PUT stores when the candidate is enforced.
func Merge(doc []byte, c Candidate) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		return nil, fmt.Errorf("reading the stored document: %w", err)
	}
	var nodes map[string]json.RawMessage
	if err := json.Unmarshal(top["nodes"], &nodes); err != nil {
		return nil, fmt.Errorf("reading the stored document's nodes: %w", err)
	}
	for name, budgets := range c.Nodes {
		var n map[string]json.RawMessage
		if err := json.Unmarshal(nodes[name], &n); err != nil || n == nil {
			return nil, fmt.Errorf("%w: the stored document has no node %q", ErrCandidate, name)
		}
		n["budgets"] = budgets
		b, err := json.Marshal(n)
		if err != nil {
			return nil, fmt.Errorf("node %q: %w", name, err)
		}
		nodes[name] = b
	}
	nb, err := json.Marshal(nodes)
	if err != nil {
		return nil, err
	}
	top["nodes"] = nb
	return json.Marshal(top)
}
