package plan

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// DefaultKVNamespace is GATE_KV_NAMESPACE's default: where counters,
// breaker records and stored documents live.
const DefaultKVNamespace = "gate"

// DefaultApplication is the application the flat routes pin.
const DefaultApplication = "default"

// Namespace is the broker namespace of an application's Gate-owned queues.
func Namespace(app string) string { return "gate." + app }

// IngressQueue is the Gate-owned ingress queue of a node.
func IngressQueue(app, graph, node string) string {
	return "gate." + app + "." + graph + "." + node + ".ingress"
}

// InteriorQueue is the queue upstream hops push into for a node.
func InteriorQueue(app, graph, node string) string {
	return "gate." + app + "." + graph + "." + node + ".in"
}

// GateOwnedQueue parses q as a Gate-owned ingress or interior queue name,
// gate.{app}.{graph}.{node}.ingress or gate.{app}.{graph}.{node}.in, and
// returns its parts with kind "ingress" or "interior".
func GateOwnedQueue(q string) (app, graph, node, kind string, ok bool) {
	rest, found := strings.CutPrefix(q, "gate.")
	if !found {
		return "", "", "", "", false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 4 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", "", false
	}
	switch parts[3] {
	case "ingress":
		kind = "ingress"
	case "in":
		kind = "interior"
	default:
		return "", "", "", "", false
	}
	return parts[0], parts[1], parts[2], kind, true
}

// Group is the consumer group of the stage of path at node.
func Group(app, graph, path, node string) string {
	return "gate." + app + "." + graph + "." + path + "." + node
}

// DefaultBudgetID is the id of the budget at index i when it declares none.
func DefaultBudgetID(i int) string { return "b" + strconv.Itoa(i) }

// BudgetKey is the kv key of a node-local budget.
func BudgetKey(app, graph, node, id string) string {
	return "b:" + app + ":" + graph + ":" + node + ":" + id
}

// SharedBudgetKey is the kv key of an application-wide shared budget: every
// node of every graph of app that names sharedKey spends it.
func SharedBudgetKey(app, sharedKey string) string {
	return "b:" + app + ":shared:" + sharedKey
}

// MeterPrefix starts every vendor meter row's kv key.
const MeterPrefix = "vm:"

// MeterKey is the kv key of the vendor meter row of the budget whose
// counter is budgetKey: what the vendor last said about its limit.
func MeterKey(budgetKey string) string { return MeterPrefix + budgetKey }

// MaxKVKeyBytes is the broker's longest kv key, in bytes.
const MaxKVKeyBytes = 512

// ScopeRoom is the longest scope value, in bytes, that ScopedKey(key, v)
// can append to key and still fit MaxKVKeyBytes (negative when key itself
// leaves no room for ':').
func ScopeRoom(key string) int { return MaxKVKeyBytes - len(key) - 1 }

// ScopedKey is the runtime key of one scope value of a scoped budget (shared
// scoped budgets included).
func ScopedKey(key, scopeValue string) string { return key + ":" + scopeValue }

// KeyLimitPrefix starts every runtime key limit row: a scope value's own
// count on a scoped budget, written by gate-api, read by every relay.
const KeyLimitPrefix = "kl:"

// KeyLimitKey is the kv key of the runtime key limit row of scope value on
// the budget whose counter key prefix is budgetKey.
func KeyLimitKey(budgetKey, value string) string {
	return KeyLimitPrefix + ScopedKey(budgetKey, value)
}

// KeyLimitRows is the prefix of every runtime key limit row of a budget.
func KeyLimitRows(budgetKey string) string { return KeyLimitPrefix + budgetKey + ":" }

// KeyLimitRoom is how many bytes a scope value may have so that both its
// counter key and its key limit row key fit MaxKVKeyBytes.
func KeyLimitRoom(budgetKey string) int { return ScopeRoom(budgetKey) - len(KeyLimitPrefix) }

// MaxDeclaredKeys is the most per-key counts one budget declares in the
// document; more go through the runtime API (…/budgets/{id}/keys/{value}).
const MaxDeclaredKeys = 1000

// MaxKeyCount is the largest per-key count (per the budget's timeMs) a
// document or the runtime API accepts: above it a limit limits nothing.
const MaxKeyCount = 1_000_000_000_000

// RiderProbeKey is the kv key a relay replica increments to prove, at start
// and after a broker change, that the broker applies transaction riders.
func RiderProbeKey(replica string) string { return "probe:riders:" + replica }

// ProbeQueue is the scratch queue the broker capability probe pushes to,
// claims from and acks on (libs/capability); one partition per probe run.
// It is named apart from the gate.{app}.… queues a declaration provisions.
const ProbeQueue = "gate-probe.broker"

// ProbeGroup is the consumer group the capability probe claims with.
const ProbeGroup = "gate-probe.broker"

// ProbePartition is the partition of one probe run of owner (a relay
// replica, a gate-api process) on ProbeQueue.
func ProbePartition(owner string, run int64) string {
	return "probe-" + owner + "-" + strconv.FormatInt(run, 36)
}

// ProbeKey is a scratch kv key of one probe run of owner; which tells the
// probe's keys apart.
func ProbeKey(owner string, run int64, which string) string {
	return "probe:broker:" + owner + ":" + strconv.FormatInt(run, 36) + ":" + which
}

// BreakerPrefix starts every breaker record's kv key.
const BreakerPrefix = "brk:"

// BreakerKey is the kv key of a node's backoff record.
func BreakerKey(app, graph, node string) string {
	return BreakerPrefix + app + ":" + graph + ":" + node
}

// DocumentKey is the kv key a v2 document is stored under.
func DocumentKey(app, graph string) string { return "graph:" + app + ":" + graph }

// ItemRecordKey is the kv key of the push door's record of an item pushed
// with transaction id txn (explain by transaction id reads it): the id is
// hashed, so any id fits the broker's key limit.
func ItemRecordKey(app, graph, txn string) string {
	h := sha256.Sum256([]byte(txn))
	return "item:" + app + ":" + graph + ":" + hex.EncodeToString(h[:16])
}

// LegacyTargetKey is the kv key of a stored v1 target document.
func LegacyTargetKey(app, name string) string { return "spec:" + app + ":" + name }

// HopLabel is the transaction-id label of a relay push into destNode.
func HopLabel(app, graph, path, destNode string) string {
	return app + "/" + graph + "/" + path + "/" + destNode
}

// TerminalLabel is the transaction-id label of the terminal push at node.
func TerminalLabel(app, graph, path, node string) string {
	return app + "/" + graph + "/" + path + "/" + node + "/out"
}

// ReentryLabel is the transaction-id label of re-entry attempt n.
func ReentryLabel(attempt int) string { return "r" + strconv.Itoa(attempt) }

// transactionNamespace is the UUID 6ba7b814-9dad-11d1-80b4-00c04fd430c8.
var transactionNamespace = [16]byte{0x6b, 0xa7, 0xb8, 0x14, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}

// DeriveTransactionID is the name-based (version 5) UUID of parent and label:
// SHA-1 over the namespace 6ba7b814-9dad-11d1-80b4-00c04fd430c8, the parent
// id's bytes (hashed as a string, never parsed), the byte 0x1F and the
// label's bytes; rendered lowercase 8-4-4-4-12.
func DeriveTransactionID(parent, label string) string {
	var out [TransactionIDLen]byte
	return string(AppendDerivedTransactionID(out[:0], parent, label))
}

// TransactionIDLen is the length of a derived transaction id.
const TransactionIDLen = 36

// AppendDerivedTransactionID appends DeriveTransactionID(parent, label) to
// dst: a settle derives many ids into one buffer and makes them strings
// with one allocation.
func AppendDerivedTransactionID(dst []byte, parent, label string) []byte {
	var stack [256]byte
	buf := append(stack[:0], transactionNamespace[:]...)
	buf = append(buf, parent...)
	buf = append(buf, 0x1F)
	buf = append(buf, label...)
	sum := sha1.Sum(buf)
	u := sum[:16]
	u[6] = u[6]&0x0F | 0x50
	u[8] = u[8]&0x3F | 0x80
	var out [TransactionIDLen]byte
	hex.Encode(out[0:8], u[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], u[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], u[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], u[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], u[10:16])
	return append(dst, out[:]...)
}

// TxnPartition is the partition of a Gate-owned ingress queue of width n
// that an item pushed with transaction id txn and no partition lands on:
// "p0".."p{n-1}", the same for every push of one txn, so a retried push
// meets the broker's per-partition dedup. It is "" when n < 2 (one
// partition: the broker's default).
func TxnPartition(txn string, n uint32) string {
	if n < 2 || txn == "" {
		return ""
	}
	// FNV-1a, 64 bit: stable across processes and releases.
	h := uint64(14695981039346656037)
	for i := 0; i < len(txn); i++ {
		h ^= uint64(txn[i])
		h *= 1099511628211
	}
	return RoundRobinPartition(h % uint64(n))
}

// RoundRobinPartition is the name of partition i of a Gate-owned ingress
// queue.
func RoundRobinPartition(i uint64) string { return "p" + strconv.FormatUint(i, 10) }
