// Package vendormeter reads a vendor's rate-limit answer — its status and
// raw response headers — into one Reading: the vendor's limit, what is left
// and used of it, when it refills and how long to wait after a refusal.
//
// It understands three families of headers (Family): the IETF RateLimit
// and RateLimit-Policy structured fields (draft-ietf-httpapi-ratelimit-
// headers), the de-facto X-RateLimit-Limit / -Remaining / -Reset, and
// GitHub's flavour of the latter with X-RateLimit-Used and
// X-RateLimit-Resource; Retry-After is read on 429 and 503 for every
// family. It is pure: no I/O, the caller gives the time. Every input is
// bounded (number of headers, bytes of each, size of every number) and
// every bad value is an *Error naming the header. It judges nothing:
// libs/budget decides what a Reading does to a counter or a ceiling.
package vendormeter
