// Package check is `gate-api check`: it validates and compiles graph
// documents offline, exactly as a PUT would, and reports each file's plan,
// errors, warnings and the broker-dependent rules it could not evaluate.
package check
