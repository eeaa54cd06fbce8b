// Package config reads gate-relay's knobs from the environment: every knob
// has a default and a clamp, and a value that is not a number where one is
// needed is a startup error naming the knob. The knobs gate-api also reads
// are defined once, in package knob.
package config
