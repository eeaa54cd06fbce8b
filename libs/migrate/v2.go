package migrate

import (
	"bytes"
	"encoding/json"
)

// The v2 document as this package writes it. Field order is the order of
// spec §1.2/§1.3, and nodes is a map, which encoding/json writes in ascending
// key order, so the same v1 input always yields the same bytes.
type v2Doc struct {
	Application string             `json:"application"`
	Graph       string             `json:"graph"`
	Version     uint32             `json:"version"`
	Nodes       map[string]*v2Node `json:"nodes"`
	Paths       []v2Path           `json:"paths"`
	MaxAttempts *uint32            `json:"maxAttempts,omitempty"`
}

type v2Node struct {
	Ingress *v2Ingress `json:"ingress,omitempty"`
	Egress  any        `json:"egress,omitempty"` // a string or *v2Egress
	Cost    v2Cost     `json:"cost"`
	Budgets []v2Budget `json:"budgets"`
	Batch   *uint32    `json:"batch,omitempty"`
}

type v2Ingress struct {
	Partitions uint32 `json:"partitions"`
	HTTP       bool   `json:"http"`
}

type v2Egress struct {
	Queue string `json:"queue"`
}

type v2Cost struct {
	Path    string `json:"path"`
	Default int64  `json:"default"`
	Max     int64  `json:"max"`
}

type v2Budget struct {
	ID         string   `json:"id,omitempty"`
	Count      int64    `json:"count"`
	TimeMs     int64    `json:"timeMs"`
	SubWindows uint32   `json:"subWindows"`
	ScopeBy    string   `json:"scopeBy,omitempty"`
	SharedKey  string   `json:"sharedKey,omitempty"`
	WhenOp     []string `json:"whenOp,omitempty"`
	Confidence string   `json:"confidence"`
	Source     *string  `json:"source,omitempty"`
	AsOf       *string  `json:"asOf,omitempty"`
}

type v2Path struct {
	Name     string   `json:"name"`
	Priority uint32   `json:"priority"`
	Share    float64  `json:"share"`
	Nodes    []string `json:"nodes"`
}

// encode writes the document compactly, without HTML escaping, and without
// the encoder's trailing newline.
func (d *v2Doc) encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
