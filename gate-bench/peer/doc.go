// Package peer is the job every contender does in gate-bench's comparison:
// move a backlog from one queue to another with the Queen client — pop a
// claim, wait for the limiter, one transaction that acks the claim and
// pushes it on — paced by golang.org/x/time/rate, by a Redis GCRA limiter
// (go-redis/redis_rate), or by nothing at all (the bare loop Gate's overhead
// is measured against).
package peer
