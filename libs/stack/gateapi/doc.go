// Package gateapi is a small client of gate-api's application routes — the
// declare routes with their preconditions, dry run and change history, the
// graph view, the push front door and backoff — as the launcher, gate-e2e,
// gate-bench and `gate-api diff` / `gate-api apply` drive them. Its answers
// are libs/wire's types; a refusal is a *StatusError carrying gate-api's
// whole refusal body.
package gateapi
