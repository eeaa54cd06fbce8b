package finding

import (
	"fmt"
	"sort"
)

// Severity says whether a finding refuses the document or only warns.
type Severity string

const (
	// Error refuses the declaration: the PUT answers 4xx and nothing is stored.
	Error Severity = "error"
	// Warning accepts the declaration: the trade is reported with the plan.
	Warning Severity = "warning"
)

// Finding is one declare rule's verdict on one place in a document.
//
// Rule is the rule's API name (for example "share-range"); At is a JSON
// pointer into the submitted document ("" means the whole document);
// Message names the number, the consequence and the fix; Numbers carries
// every figure the rule computed, keyed by a stable name, so a caller never
// has to parse Message.
type Finding struct {
	Rule     string             `json:"rule"`
	Severity Severity           `json:"severity"`
	At       string             `json:"at"`
	Message  string             `json:"message"`
	Numbers  map[string]float64 `json:"numbers,omitempty"`
}

// Error makes a Finding usable as an error value.
func (f Finding) Error() string {
	if f.At == "" {
		return fmt.Sprintf("%s: %s", f.Rule, f.Message)
	}
	return fmt.Sprintf("%s at %s: %s", f.Rule, f.At, f.Message)
}

// List is an ordered collection of findings.
type List []Finding

// Errors returns the findings with Severity Error, in order.
func (l List) Errors() List { return l.filter(Error) }

// Warnings returns the findings with Severity Warning, in order.
func (l List) Warnings() List { return l.filter(Warning) }

// HasErrors reports whether any finding refuses the document.
func (l List) HasErrors() bool { return len(l.Errors()) > 0 }

// Rules returns the distinct rule names in first-seen order.
func (l List) Rules() []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range l {
		if !seen[f.Rule] {
			seen[f.Rule] = true
			out = append(out, f.Rule)
		}
	}
	return out
}

// Sort orders findings by JSON pointer, then rule, then message, so that the
// same document always reports its findings in the same order.
func (l List) Sort() {
	sort.SliceStable(l, func(i, j int) bool {
		if l[i].At != l[j].At {
			return l[i].At < l[j].At
		}
		if l[i].Rule != l[j].Rule {
			return l[i].Rule < l[j].Rule
		}
		return l[i].Message < l[j].Message
	})
}

func (l List) filter(s Severity) List {
	var out List
	for _, f := range l {
		if f.Severity == s {
			out = append(out, f)
		}
	}
	return out
}
