// Package config reads gate-api's knobs from the environment: every knob has
// a default, a clamp where the product description gives one, and a startup
// error naming the knob and the fix for a value that cannot be read. The
// knobs gate-relay also reads are defined once, in package knob.
package config
