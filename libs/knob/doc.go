// Package knob reads Gate's environment settings: one definition, default,
// range and error per knob, shared by every binary.
//
// The policy is the same for every knob defined here:
//
//   - unset, empty or blank keeps the default;
//   - a value that does not parse (a number knob given "ten", a URL that is
//     not absolute http(s), a namespace the broker would refuse, a log level
//     that is not a level) is a startup error naming the knob, the value and
//     the fix;
//   - a number that parses but lies outside the documented range is clamped
//     to the nearest end of that range, as the runtime spec (§8.1) and the
//     product description clamp GATE_STAGE_BATCH and
//     GATE_MAX_PUSH_BODY_BYTES.
//
// A binary reads the knobs it shares with the others through Shared and
// keeps its own binary-only knobs beside it.
package knob
