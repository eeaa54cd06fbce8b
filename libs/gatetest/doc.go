// Package gatetest hands a Gate test its live components — a Queen broker, a
// PostgreSQL schema and a NATS subject prefix — each isolated to that test,
// plus the Eventually polling helpers every Gate test uses.
//
// Where each component comes from is decided by Decide, a pure function of the
// environment and a few probes:
//
//   - broker: GATE_TEST_QUEEN_URL; else Queen (ghcr.io/queen-mq/queen:latest on
//     postgres:18) in Docker via testcontainers when a Docker engine answers;
//     else an in-process miniqueen (Broker.Mini is then non-nil);
//   - PostgreSQL: GATE_TEST_PG_URL; else 127.0.0.1:5432 (user postgres, trust);
//     else postgres:18 in Docker; else the component is missing;
//   - NATS: GATE_TEST_NATS_URL; else 127.0.0.1:4222; else an embedded
//     nats-server on a random port, with JetStream.
//
// A missing component skips the test with the reason, unless
// GATE_TEST_REQUIRE_LIVE is set to a true value, when it fails the test and
// says how to provide the component. GATE_TEST_NO_DOCKER=1 keeps the harness
// from ever starting containers.
package gatetest
