// Package httpapi is the HTTP core every Gate server shares: gate-api's
// application plane and gate-console's public plane route, refuse, read
// bodies the same way (both serve through libs/service.HTTP).
//
// It owns the router (gorilla/mux, with route names for the request
// metrics), the handler shape (a Handler gets a Request with its
// percent-decoded route variables and returns the Refusal to write, or
// nil after writing its answer), the wrapper around every route (panic
// recovery, the route's body limit, the broker deadline that restarts once
// the body is read, the answer's own write window, per-route request
// counts and a WARN line for every server error), the Refusal with its
// stable code from the wire catalogue and typed detail setters, the one
// WriteJSON, strict body reading and the query parameters.
package httpapi
