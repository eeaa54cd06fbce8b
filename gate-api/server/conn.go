package server

import (
	"bytes"
	"encoding/json"
	"net"
	"strconv"

	"github.com/queen-mq/gate/libs/wire"
)

// jsonErrorListener makes the answers net/http writes itself, before any
// handler runs (a request line with a malformed percent-escape, headers
// over MaxHeaderBytes, a transfer coding it does not know), JSON errors
// like every other refusal of gate-api: net/http writes each of them as one
// plain-text response in a single Write on the raw connection, which a
// connection wrapper can recognise exactly and rewrite.
type jsonErrorListener struct{ net.Listener }

func (l jsonErrorListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &jsonErrorConn{Conn: c}, nil
}

type jsonErrorConn struct{ net.Conn }

// plainErrorHeaders is what net/http puts between the status line and the
// body of the answers it writes itself.
var plainErrorHeaders = []byte("\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n")

func (c *jsonErrorConn) Write(b []byte) (int, error) {
	if out, ok := rewritePlainError(b); ok {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// rewritePlainError turns one of net/http's own plain-text error answers
// into the same status with a JSON {"error": …} body; ok is false for
// anything else (every handler's answer carries its own Content-Type).
func rewritePlainError(b []byte) ([]byte, bool) {
	const prefix = "HTTP/1.1 "
	if len(b) < len(prefix)+3 || string(b[:len(prefix)]) != prefix {
		return nil, false
	}
	i := bytes.Index(b, plainErrorHeaders)
	if i < 0 || bytes.IndexByte(b[:i], '\n') >= 0 {
		return nil, false
	}
	status, err := strconv.Atoi(string(b[len(prefix) : len(prefix)+3]))
	if err != nil || status < 400 {
		return nil, false
	}
	detail := string(b[i+len(plainErrorHeaders):])
	refusal := wire.Error{Code: wire.CodeMalformedRequest}
	switch status {
	case 431:
		refusal.Error, refusal.Code = "the request headers are larger than gate-api reads (1 MiB in all): send fewer or shorter headers", wire.CodeHeadersTooLarge
	case 400:
		refusal.Error = "the request could not be read as HTTP/1.1 (" + detail + "): check the request line — a '%' in the URL must start a percent-escape of two hex digits (write a literal '%' as %25) — and that every header is a valid name: value line"
	default:
		refusal.Error = "the request could not be read as HTTP/1.1 (" + detail + "): send a plain HTTP/1.1 request with a JSON body"
	}
	body, _ := json.Marshal(refusal)
	body = append(body, '\n')
	out := make([]byte, 0, i+len(body)+96)
	out = append(out, b[:i]...)
	out = append(out, "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: "...)
	out = strconv.AppendInt(out, int64(len(body)), 10)
	out = append(out, "\r\n\r\n"...)
	return append(out, body...), true
}
