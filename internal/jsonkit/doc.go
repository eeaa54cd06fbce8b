// Package jsonkit is Gate's one hand-written JSON code, for the hot paths
// where encoding/json's reflection costs too much (a relayed claim reads
// and writes JSON for every one of its items). It holds:
//
//   - AppendString, the one string encoder: encoding/json's bytes without
//     HTML escaping (fuzzed against it);
//   - the grammar, once (syntax.go): strings, numbers and values checked
//     at a local index, fast enough for every payload, with Skip-like
//     validation exactly json.Valid's;
//   - Scanner, the one reader built on it: it walks a document value by
//     value and fills Go values the way encoding/json fills the same
//     types, and refuses what encoding/json refuses; LastMember and
//     Unquote are its one-call forms for a member's value and a string;
//   - StringEnd, ValueEnd and NextMember, which step over JSON already
//     known to be valid (checked by json.Valid or read by a Scanner)
//     without checking it again: splicing a member into an object, for
//     instance, needs only its members' boundaries;
//   - Run and Plain, the eight-bytes-at-a-time test for plain string
//     content all of the above use.
//
// It is internal to Gate's modules and depends on the standard library
// only.
package jsonkit
