package miniqueen

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
)

func writeKVError(w http.ResponseWriter, e *kvError) {
	h := w.Header()
	if e.status == http.StatusServiceUnavailable || e.status == http.StatusTooManyRequests {
		h.Set("Retry-After", "1")
	}
	writeJSON(w, e.status, map[string]string{"error": e.code, "reason": e.reason, "detail": e.detail})
}

// runKV executes one validated KV call; on a lost required gate it rolls
// back and returns the verdict.
func (s *Server) runKV(cmds []kvCmd) ([]kvRes, *kvVerdict) {
	res := make([]kvRes, len(cmds))
	required := false
	for i := range cmds {
		required = required || cmds[i].required
	}
	h := s.lockShared(true, func() []*queue { return nil })
	defer h.unlock()
	now := s.now()
	s.sweepKV(now)
	if !required {
		s.execKV(cmds, res, now, nil)
		return res, nil
	}
	j := newJournal()
	v := s.execKV(cmds, res, now, j)
	if v != nil {
		s.undo(j)
	}
	return res, v
}

// checkAndRunKV validates ops (field names the body part for errors) and
// runs them. ok=false means the refusal or the verdict is already written.
func (s *Server) checkAndRunKV(w http.ResponseWriter, ops []kvOpWire, field string) (res []kvRes, ok bool) {
	cmds, kerr := validateKV(ops, false, field)
	if kerr != nil {
		writeKVError(w, kerr)
		return nil, false
	}
	res, v := s.runKV(cmds)
	if v != nil {
		writeVerdict(w, v)
		return nil, false
	}
	return res, true
}

func writeVerdict(w http.ResponseWriter, v *kvVerdict) {
	jb := getJW()
	defer putJW(jb)
	jb.raw("{")
	writeVerdictFields(jb, v, v.index)
	jb.raw("}")
	writeRaw(w, http.StatusOK, jb.b)
}

func (s *Server) handleKVBatch(w http.ResponseWriter, r *http.Request) {
	if s.kvDisabled(w) {
		return
	}
	b, release, err := readBody(r)
	if err != nil {
		writeKVError(w, kvBad("kv_bad_body", "reading the body: %v", err))
		return
	}
	defer release()
	b = bytes.TrimSpace(b)
	var ops []kvOpWire
	switch {
	case len(b) > 0 && b[0] == '[':
		var fast bool
		if ops, fast = scanKVOps(b); !fast {
			err = json.Unmarshal(b, &ops)
		}
	case len(b) > 0 && b[0] == '{':
		var body struct {
			Operations *[]kvOpWire `json:"operations"`
		}
		var fast bool
		if body.Operations, fast = scanKVBody(b); !fast {
			err = json.Unmarshal(b, &body)
		}
		if err == nil && body.Operations == nil {
			writeKVError(w, kvBad("kv_bad_body", "the body needs an operations array: {\"operations\":[…]}"))
			return
		}
		if body.Operations != nil {
			ops = *body.Operations
		}
	default:
		writeKVError(w, kvBad("kv_bad_body", "the body must be {\"operations\":[…]} or a JSON array of operations"))
		return
	}
	if err != nil {
		writeKVError(w, kvBad("kv_bad_body", "bad JSON: %v", err))
		return
	}
	res, ok := s.checkAndRunKV(w, ops, "operations")
	if !ok {
		return
	}
	jb := getJW()
	defer putJW(jb)
	jb.b = slices.Grow(jb.b, kvAnswerSize(res))
	jb.raw(`{"results":[`)
	for i := range res {
		if i > 0 {
			jb.comma()
		}
		jb.raw(`{"index":`)
		jb.int(int64(i))
		jb.comma()
		writeKVRes(jb, &res[i])
		jb.raw("}")
	}
	jb.raw("]}")
	writeRaw(w, http.StatusOK, jb.b)
}

// kvAnswerSize is about the bytes of the answer to res (a little more,
// never much less), so a listing's answer is written into one buffer of
// the right size instead of one doubled and copied a dozen times.
func kvAnswerSize(res []kvRes) int {
	const fixed = 160 // an answer's or a row's fields besides key and value
	n := fixed
	for i := range res {
		r := &res[i]
		n += fixed + len(r.key) + len(r.value)
		if r.e != nil {
			n += len(r.e.raw)
		}
		for _, row := range r.rows {
			n += fixed + len(row.key)
			if !r.keysOnly {
				n += len(row.e.raw)
			}
		}
		for _, k := range r.missing {
			n += len(k) + 3
		}
	}
	return n
}

// pathOp builds the single operation of a path route, refusing query
// strings and path fields in the body.
func pathOp(r *http.Request, op string, body []byte) (kvOpWire, *kvError) {
	w := kvOpWire{Op: op, NS: r.PathValue("ns"), Key: r.PathValue("key")}
	if r.URL.RawQuery != "" || r.URL.ForceQuery {
		return w, kvBad("kv_no_query_string", "KV path routes take no query string; put options in the JSON body")
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return w, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return w, kvBad("kv_bad_body", "bad JSON body: %v", err)
	}
	for _, f := range []string{"op", "ns", "namespace", "key"} {
		if _, ok := fields[f]; ok {
			return w, kvBad("kv_field_in_path", "the body field %q is given by the URL path; remove it", f)
		}
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return w, kvBad("kv_bad_body", "bad JSON body: %v", err)
	}
	w.Op, w.NS, w.Key = op, r.PathValue("ns"), r.PathValue("key")
	return w, nil
}

func (s *Server) handleKVPath(w http.ResponseWriter, r *http.Request, op string) {
	if s.kvDisabled(w) {
		return
	}
	var body []byte
	if op != "get" {
		b, release, err := readBody(r)
		if err != nil {
			writeKVError(w, kvBad("kv_bad_body", "reading the body: %v", err))
			return
		}
		defer release()
		body = b
	}
	if op == "put" && len(bytes.TrimSpace(body)) == 0 {
		writeKVError(w, kvBad("kv_bad_body", "PUT needs a body {\"value\":…,\"ttlSeconds\":N} or {\"value\":…,\"forever\":true}"))
		return
	}
	wire, kerr := pathOp(r, op, body)
	if kerr != nil {
		writeKVError(w, kerr)
		return
	}
	res, ok := s.checkAndRunKV(w, []kvOpWire{wire}, "request")
	if !ok {
		return
	}
	jb := getJW()
	defer putJW(jb)
	jb.raw(`{"index":0,`)
	writeKVRes(jb, &res[0])
	jb.raw("}")
	if op == "get" && res[0].found {
		w.Header().Set("ETag", `"`+strconv.FormatInt(res[0].e.version, 10)+`"`)
	}
	writeRaw(w, http.StatusOK, jb.b)
}

func (s *Server) handleKVGet(w http.ResponseWriter, r *http.Request) { s.handleKVPath(w, r, "get") }
func (s *Server) handleKVPut(w http.ResponseWriter, r *http.Request) { s.handleKVPath(w, r, "put") }
func (s *Server) handleKVDelete(w http.ResponseWriter, r *http.Request) {
	s.handleKVPath(w, r, "delete")
}
