// Package server is gate-api, Gate's application plane: the HTTP routes
// applications call to declare graphs (compile, provision, store in Queen
// kv), push through the front door, back off, re-enter and ask for an ETA.
// It never runs stages; gate-relay replicas read what it stores and publish
// their status in kv, which is where it learns what runs.
//
// This package is the public assembly gate-console mounts: New builds the
// shared state (internal/plane) and the route families (internal/push,
// declare, live, insight, ai) on one libs/httpapi router, Start and Stop
// run the background refresh, Serve and Run listen and drain.
package server
