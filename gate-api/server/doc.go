// Package server is gate-api, Gate's application plane: the HTTP routes
// applications call to declare graphs (compile, provision, store in Queen
// kv), push through the front door, back off, re-enter and ask for an ETA.
// It never runs stages; gate-relay replicas read what it stores and publish
// their status in kv, which is where this package learns what runs.
package server
