// Package load is gate-e2e's run: it declares the two-path graph (a 1.0 and
// a 0.5 share on one shared node), floods it through the front door (or
// straight into the ingress queues) with several producers over many
// partitions, drains the egress with several consumers as a user's workers
// would, samples the shared counter and the graph view, and judges the run:
// did the declared ceiling hold, was the declared rate reached, did the
// reserve hold — plus exactly-once delivery under chaos and the backoff
// stop-and-recover.
package load
