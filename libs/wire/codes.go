package wire

// Code is the stable machine code of a refusal: every error body gate-api
// and gate-console write carries one in "code", next to the sentence in
// "error". A client branches on the code (and the status), never on the
// sentence, which may be reworded. Codes are kebab-case like the declare
// rules; Codes lists every one with the statuses it is answered with, and
// gate-api/README.md shows the same table (a test keeps them equal).
type Code string

// The refusal codes. Each doc comment is the meaning the README's table
// shows.
const (
	// CodeInvalidJSON means the body is not valid JSON (a syntax error,
	// trailing data after the value).
	CodeInvalidJSON Code = "invalid-json"
	// CodeEmptyBody means the request has no body where the route reads one.
	CodeEmptyBody Code = "empty-body"
	// CodeBodyUnreadable means reading the body failed before its end (the
	// connection broke or the client stopped sending).
	CodeBodyUnreadable Code = "body-unreadable"
	// CodeUnsupportedMediaType means a body was sent without a JSON
	// Content-Type (application/json or application/…+json).
	CodeUnsupportedMediaType Code = "unsupported-media-type"
	// CodeBodyTooLarge means the body is larger than the route's limit
	// (limit: GATE_MAX_PUSH_BODY_BYTES on push routes, else 2 MiB).
	CodeBodyTooLarge Code = "body-too-large"
	// CodeWrongType means the body or one of its fields has another JSON
	// type than the route reads (an array where an object belongs, a
	// string where a whole number belongs; field names it).
	CodeWrongType Code = "wrong-type"
	// CodeUnknownField means the body has a field the route does not know,
	// or one whose case differs from a known one (field names it).
	CodeUnknownField Code = "unknown-field"
	// CodeDuplicateField means the body gives one field twice, at any depth
	// (field names it).
	CodeDuplicateField Code = "duplicate-field"
	// CodeInvalidUTF8 means a string of the body (a key or a value) is not
	// valid UTF-8 (field names it).
	CodeInvalidUTF8 Code = "invalid-utf8"
	// CodeMissingField means a field the route needs is absent (field
	// names it).
	CodeMissingField Code = "missing-field"
	// CodeInvalidField means a field's value is refused: too long, with
	// control characters, out of its range or not usable as sent (field
	// names it).
	CodeInvalidField Code = "invalid-field"
	// CodeInvalidQuery means a query parameter is refused: given twice, not
	// a whole number, out of its range or not of its form (field names it).
	CodeInvalidQuery Code = "invalid-query"
	// CodeInvalidName means an application, graph or node name in the URL
	// breaks the name rule (1–63 bytes of a-z, 0-9 and '-'; field names the
	// segment). On a PUT the declare rules application and graph-name say
	// it instead.
	CodeInvalidName Code = "invalid-name"
	// CodeInvalidURLEncoding means a segment of the URL is not valid
	// percent-encoding (field names it).
	CodeInvalidURLEncoding Code = "invalid-url-encoding"
	// CodeRouteNotFound means no route has this method and path.
	CodeRouteNotFound Code = "route-not-found"
	// CodeMethodNotAllowed means the path exists but not with this method.
	CodeMethodNotAllowed Code = "method-not-allowed"
	// CodeMalformedRequest means net/http could not read the request as
	// HTTP/1.1 before any route ran: a malformed percent-escape in the
	// request line or a bad header line (400), a transfer coding it does
	// not implement (501), a protocol version it does not take (505).
	CodeMalformedRequest Code = "malformed-request"
	// CodeHeadersTooLarge means the request headers are over 1 MiB.
	CodeHeadersTooLarge Code = "headers-too-large"
	// CodeInternalError means the server failed on the request (a bug or a
	// local failure, logged): retry, and report it if it repeats.
	CodeInternalError Code = "internal-error"
	// CodeBrokerTimeout means the broker did not answer the request's
	// broker work within GATE_BROKER_TIMEOUT_MS (broker, timeoutMs,
	// Retry-After: 1); the refusal's other fields say what the route knew.
	CodeBrokerTimeout Code = "broker-timeout"
	// CodeBrokerUnhealthy means the broker is unreachable or reports
	// itself unhealthy (GET /health: status, queen).
	CodeBrokerUnhealthy Code = "broker-unhealthy"
	// CodeBrokerLacks means the broker answers but is not the broker Gate
	// needs: it lacks kv incr with max, the depth route or the cumulative
	// ack that releases a claim's lease (queen.needs lists each with the
	// fix). GET /health answers it, and a declaration is refused with it
	// before anything is provisioned.
	CodeBrokerLacks Code = "broker-lacks"
	// CodeBrokerFailed means a broker call the route needs failed or was
	// refused (the counters, the breaker records); nothing was changed
	// unless the sentence says otherwise.
	CodeBrokerFailed Code = "broker-failed"

	// CodeGraphNotFound means no graph of that name is declared in the
	// application (on a flat route: in any application).
	CodeGraphNotFound Code = "graph-not-found"
	// CodeApplicationNotFound means the application declares no graph.
	CodeApplicationNotFound Code = "application-not-found"
	// CodeAmbiguousGraph means a flat route names a graph several
	// applications declare (applications lists them).
	CodeAmbiguousGraph Code = "ambiguous-graph"
	// CodeStoredDocumentInvalid means the graph's stored document does not
	// compile (it was stored by an older gate-api): PUT a corrected one.
	CodeStoredDocumentInvalid Code = "stored-document-invalid"
	// CodeNodeNotFound means the graph has no node of that name, or none
	// the route can answer for (field names node).
	CodeNodeNotFound Code = "node-not-found"
	// CodePathNotFound means the graph has no path of that name, or none
	// through the node (field names path; paths lists the choices).
	CodePathNotFound Code = "path-not-found"
	// CodeItemNotFound means explain was asked about a transaction id the
	// push door has no record of (never pushed with it to this graph, or
	// pushed more than a day ago; field names transactionId).
	CodeItemNotFound Code = "item-not-found"
	// CodeAmbiguousNode means a target has several ingress nodes, so the
	// target route cannot pick one (nodes lists them).
	CodeAmbiguousNode Code = "ambiguous-node"
	// CodeNoIngress means the node (or the target, or the path's first
	// node) has no ingress to push or re-enter into.
	CodeNoIngress Code = "no-ingress"
	// CodeHTTPPushOff means the node reads an application-owned queue with
	// the HTTP front door off: push to that queue with your own SDK.
	CodeHTTPPushOff Code = "http-push-off"
	// CodeNotRunning means no gate-relay replica runs the graph, so the
	// ETA has nothing to bound (Retry-After: 1). Pushes and re-entries are
	// never refused for it: they queue and say so (Gate-Relay: none).
	CodeNotRunning Code = "not-running"
	// CodeShed means the node sheds and every unscoped counter is at its
	// ceiling: nothing was charged or queued (node, retryAfterSeconds,
	// Retry-After).
	CodeShed Code = "shed"
	// CodePushInflightFull means the bytes of pushes in flight would pass
	// GATE_PUSH_INFLIGHT_BYTES: nothing was read or queued (inflightBytes,
	// limit, Retry-After: 1).
	CodePushInflightFull Code = "push-inflight-full"
	// CodePushOutcomeUnknown means the push was sent to the broker but its
	// answer did not come back before the request ended: retry with the
	// same txn.
	CodePushOutcomeUnknown Code = "push-outcome-unknown"
	// CodePushFailed means the broker refused the push (or re-entry) as
	// bad input (400, 413, 422): nothing was queued, and the same item is
	// refused again; the sentence names what the broker said.
	CodePushFailed Code = "push-failed"
	// CodePushUnavailable means the broker cannot take the item right now
	// (unreachable, failing, overloaded or not storing it): nothing was
	// queued; retry after Retry-After with the same txn.
	CodePushUnavailable Code = "push-unavailable"
	// CodeCostMax means the item's cost is above the node's cost.max
	// (rule cost-max).
	CodeCostMax Code = "cost-max"
	// CodeScopeValueMissing means a scoped budget that applies to the item
	// finds no value at its scopeBy path (field, budget).
	CodeScopeValueMissing Code = "scope-value-missing"
	// CodeScopeValueTooLong means the item's scope value would make its
	// counter key longer than the broker's 512 bytes (field, budget, room,
	// bytes).
	CodeScopeValueTooLong Code = "scope-value-too-long"
	// CodeMaxAttempts means a re-entry's attempt is over the graph's
	// maxAttempts: dead-letter the item (maxAttempts).
	CodeMaxAttempts Code = "max-attempts"
	// CodeNoUnscopedBudget means a backoff names a node with only scoped
	// budgets, which has no window to spend.
	CodeNoUnscopedBudget Code = "no-unscoped-budget"
	// CodeInvalidHeader means an observed vendor answer carries a header
	// Gate cannot read: malformed, negative, huge, dated, too long or too
	// many (field names the header).
	CodeInvalidHeader Code = "invalid-header"
	// CodeNoVendorMeter means an observe names a node (or budget) whose
	// budgets mirror no vendor meter (vendorMeter in the document).
	CodeNoVendorMeter Code = "no-vendor-meter"
	// CodeBudgetNotFound means the node has no budget of that id (field
	// budget).
	CodeBudgetNotFound Code = "budget-not-found"
	// CodeUnscopedBudget means limits per key name a budget without
	// scopeBy, which keeps one counter for every item (field budget).
	CodeUnscopedBudget Code = "unscoped-budget"
	// CodeInvalidKeyLimit means a limit per key cannot be set: a scope
	// value that is empty or longer than the key room, a count outside
	// 1..10^12 or below the node's largest item (field value or count).
	CodeInvalidKeyLimit Code = "invalid-key-limit"
	// CodeKeyLimitNotFound means the scope value has no runtime limit on
	// that budget (a document count, if any, is in the plan's keys).
	CodeKeyLimitNotFound Code = "key-limit-not-found"
	// CodeInvalidStamp means a settle's message carries no `_gate` stamp
	// with charge records, or one whose signature does not verify: forged,
	// altered, or copied from another message (field names it).
	CodeInvalidStamp Code = "invalid-stamp"
	// CodeUnknownMessage means a settle's stamp is for another graph, or
	// records no charge at the node settled.
	CodeUnknownMessage Code = "unknown-message"
	// CodeStaleCharge means a settle comes later than its charge's longest
	// window plus four minutes, when a repeat could no longer be told apart.
	CodeStaleCharge Code = "stale-charge"
	// CodeETAUnavailable means the backlog or the counters an ETA needs
	// could not be read from the broker.
	CodeETAUnavailable Code = "eta-unavailable"
	// CodeGone means the route was removed (the pop and the leases): the
	// sentence says what replaces it (queue when there is one).
	CodeGone Code = "gone"

	// CodeDeclareRefused means the document was refused by a declare rule
	// (rule, rules, problems; 409 for version-bump, version-order and
	// ingress-owner), or could not be read as a document at all (rule
	// document).
	CodeDeclareRefused Code = "declare-refused"
	// CodeDeclareContended means the graph's stored document kept changing
	// (declares through other gate-api processes) while this declare was
	// checked and stored: nothing was stored; retry.
	CodeDeclareContended Code = "declare-contended"
	// CodeProvisioningFailed means provisioning the graph's queues failed:
	// nothing was stored, and the sentence says what still serves.
	CodeProvisioningFailed Code = "provisioning-failed"
	// CodeStoreFailed means writing or deleting the stored document in kv
	// failed: the sentence says what still serves or was stopped.
	CodeStoreFailed Code = "store-failed"
	// CodeInvalidPrecondition means a precondition header is refused: an
	// If-Match or If-None-Match that is not "*" or a list of quoted entity
	// tags (RFC 9110), that holds more than 64 tags or 4 KiB, or a
	// precondition the graph routes do not evaluate (If-Modified-Since,
	// If-Unmodified-Since, If-Range; field names the header). Send the ETag
	// of a GET or PUT answer.
	CodeInvalidPrecondition Code = "invalid-precondition"
	// CodePreconditionFailed means the stored document is not the one the
	// request's If-Match names, If-Match: * found nothing stored, or
	// If-None-Match found a document (create means create): nothing was
	// stored or deleted. The body carries the current etag, storedVersion
	// and, when history knows, changedBy and changedAt.
	CodePreconditionFailed Code = "precondition-failed"
	// CodeInvalidRevision means the revision number in a history URL is not a
	// whole number from 1 (field names revision).
	CodeInvalidRevision Code = "invalid-revision"
	// CodeRevisionNotFound means the graph's history has no such revision
	// (never recorded, or removed by retention; field names revision).
	CodeRevisionNotFound Code = "revision-not-found"
	// CodeRevisionNotRestorable means the history revision records a
	// deletion, so it has no document to restore: restore the revision
	// before it.
	CodeRevisionNotRestorable Code = "revision-not-restorable"

	// CodeNoHistory means the route needs the PostgreSQL history and this
	// server has none (PG_HOST is not set).
	CodeNoHistory Code = "no-history"
	// CodeHistoryFailed means reading the PostgreSQL history failed
	// (the sentence names the database and its knob, PG_HOST or PG_URL).
	CodeHistoryFailed Code = "history-failed"
	// CodeHistoryTimeout means the PostgreSQL history did not answer a
	// read in time (the sentence names the database and its knob, PG_HOST
	// or PG_URL; the broker is not involved; Retry-After: 1).
	CodeHistoryTimeout Code = "history-timeout"
	// CodeNotWatching means the graph is not in Watch, so there is no
	// recording to read or replay.
	CodeNotWatching Code = "not-watching"
	// CodeWatchNotStarted means the graph is in Watch but has no
	// watch.startedAt: declare it again through gate-api.
	CodeWatchNotStarted Code = "watch-not-started"
	// CodePreviewUnsupported means the node's shape is outside what the
	// one-node limit preview replays (a payload cost, several paths): use
	// POST …/simulate with a candidate document.
	CodePreviewUnsupported Code = "preview-unsupported"
	// CodeAllowanceTooSmall means the tried allowance admits less per
	// sub-window than one item costs, so no item could ever pass.
	CodeAllowanceTooSmall Code = "allowance-too-small"
	// CodeRecordingCostChanged means the node's recorded cost per item
	// changed inside the replayed range (second names where).
	CodeRecordingCostChanged Code = "recording-cost-changed"
	// CodeShadowInvalid means a shadow candidate's body is not budgets per
	// node ({"nodes": {"NODE": {"budgets": [...]}}}) of the graph's own
	// nodes (field names what; a candidate whose budgets do not compile is
	// declare-refused, naming the document field).
	CodeShadowInvalid Code = "shadow-invalid"

	// CodeAIOff means the AI configuration agent is off: the sentence says
	// which knobs turn it on (rule ai-off).
	CodeAIOff Code = "ai-off"
	// CodeAIBusy means this replica already runs its most concurrent AI
	// chats (rule ai-busy, Retry-After: 1).
	CodeAIBusy Code = "ai-busy"
	// CodeAIRequest means the chat request breaks one of its bounds (rule
	// ai-request, field).
	CodeAIRequest Code = "ai-request"
	// CodeAIStore means the declared graphs could not be read, so a draft
	// cannot be checked against them (rule ai-store).
	CodeAIStore Code = "ai-store"
	// CodeAIDraftInvalid means the model's drafts kept failing the declare
	// rules (rule ai-draft-invalid).
	CodeAIDraftInvalid Code = "ai-draft-invalid"
	// CodeAIAccess means the AI provider refused the key or its access to
	// the model (rule ai-access).
	CodeAIAccess Code = "ai-access"
	// CodeAIQuota means the AI provider's quota or rate limit is exhausted
	// (rule ai-quota).
	CodeAIQuota Code = "ai-quota"
	// CodeAIConfiguration means the AI provider refused the request's
	// configuration or the model (rule ai-configuration).
	CodeAIConfiguration Code = "ai-configuration"
	// CodeAIUnfinished means the AI provider did not finish its reply
	// (rule ai-unfinished).
	CodeAIUnfinished Code = "ai-unfinished"
	// CodeAITimeout means the AI chat or one provider call took too long
	// (rule ai-timeout).
	CodeAITimeout Code = "ai-timeout"
	// CodeAIReply means the AI provider's reply could not be used: too
	// large, unreadable or not of the agreed shape (rule ai-reply).
	CodeAIReply Code = "ai-reply"
	// CodeAIUnavailable means the AI provider is unavailable or
	// unreachable (rule ai-unavailable).
	CodeAIUnavailable Code = "ai-unavailable"

	// CodeSignInRequired means the console request has no usable session:
	// none, expired or not valid (an HTML navigation is redirected to
	// sign-in instead).
	CodeSignInRequired Code = "sign-in-required"
	// CodeSignInNotConfigured means the console has no sign-in configured
	// (GOOGLE_CLIENT_ID … GATE_SESSION_SECRET, or GATE_DEV_EMAIL).
	CodeSignInNotConfigured Code = "sign-in-not-configured"
	// CodeReadOnly means the signed-in account is not in
	// GATE_ADMIN_EMAILS, so it may only read.
	CodeReadOnly Code = "read-only"
	// CodeCrossSite means a write came from another origin
	// (http.CrossOriginProtection).
	CodeCrossSite Code = "cross-site"
	// CodeSignInState means the sign-in callback's state is missing, not
	// valid, expired or was started in another browser: sign in again.
	CodeSignInState Code = "sign-in-state"
	// CodeSignInRefused means the sign-in provider refused the sign-in, or
	// refused its code as invalid_grant (already used, expired): sign in
	// again.
	CodeSignInRefused Code = "sign-in-refused"
	// CodeSignInProviderFailed means the sign-in provider did not answer
	// its discovery document or refused the code exchange.
	CodeSignInProviderFailed Code = "sign-in-provider-failed"
	// CodeSignInToken means the provider's id token is absent, does not
	// verify, or lacks the claims a session needs.
	CodeSignInToken Code = "sign-in-token"
	// CodeAccountNotAllowed means the account's e-mail is not verified or
	// not in GOOGLE_ALLOWED_DOMAINS.
	CodeAccountNotAllowed Code = "account-not-allowed"
	// CodeLiveUnavailable means the console cannot open another live
	// stream (too many are open, or it is shutting down; Retry-After: 5).
	CodeLiveUnavailable Code = "live-unavailable"
	// CodeLiveTooMany means this account already holds the most live
	// streams one identity may open on a console (close a tab;
	// Retry-After: 5).
	CodeLiveTooMany Code = "live-too-many"
	// CodeFileNotFound means the console's web app has no such file (app
	// pages are served to HTML navigations only).
	CodeFileNotFound Code = "file-not-found"
	// CodeWebAppMissing means the console binary was built without its web
	// app.
	CodeWebAppMissing Code = "webapp-missing"
)

// CodeStatuses is one code of the catalogue with the HTTP statuses it is
// answered with.
type CodeStatuses struct {
	// Code is the code.
	Code Code `json:"code"`
	// Statuses are the HTTP statuses a refusal with this code has.
	Statuses []int `json:"statuses"`
}

// Codes is the catalogue: every refusal code, in the order the docs list
// it, with its statuses. A refusal whose code is not here, or whose status
// is not one of its code's, is a bug the route tests catch.
var Codes = []CodeStatuses{
	{CodeInvalidJSON, []int{400}},
	{CodeEmptyBody, []int{400}},
	{CodeBodyUnreadable, []int{400}},
	{CodeUnsupportedMediaType, []int{415}},
	{CodeBodyTooLarge, []int{413}},
	{CodeWrongType, []int{422}},
	{CodeUnknownField, []int{422}},
	{CodeDuplicateField, []int{422}},
	{CodeInvalidUTF8, []int{422}},
	{CodeMissingField, []int{422}},
	{CodeInvalidField, []int{422}},
	{CodeInvalidQuery, []int{400, 422}},
	{CodeInvalidName, []int{400}},
	{CodeInvalidURLEncoding, []int{400}},
	{CodeRouteNotFound, []int{404}},
	{CodeMethodNotAllowed, []int{405}},
	{CodeMalformedRequest, []int{400, 501, 505}},
	{CodeHeadersTooLarge, []int{431}},
	{CodeInternalError, []int{500}},
	{CodeBrokerTimeout, []int{504}},
	{CodeBrokerUnhealthy, []int{503}},
	{CodeBrokerLacks, []int{503}},
	{CodeBrokerFailed, []int{502}},
	{CodeGraphNotFound, []int{404}},
	{CodeApplicationNotFound, []int{404}},
	{CodeAmbiguousGraph, []int{409}},
	{CodeStoredDocumentInvalid, []int{409}},
	{CodeNodeNotFound, []int{404}},
	{CodePathNotFound, []int{404}},
	{CodeItemNotFound, []int{404}},
	{CodeAmbiguousNode, []int{409}},
	{CodeNoIngress, []int{409}},
	{CodeHTTPPushOff, []int{409}},
	{CodeNotRunning, []int{503}},
	{CodeShed, []int{429}},
	{CodePushInflightFull, []int{503}},
	{CodePushOutcomeUnknown, []int{504}},
	{CodePushFailed, []int{502}},
	{CodePushUnavailable, []int{503}},
	{CodeCostMax, []int{422}},
	{CodeScopeValueMissing, []int{422}},
	{CodeScopeValueTooLong, []int{422}},
	{CodeMaxAttempts, []int{422}},
	{CodeNoUnscopedBudget, []int{422}},
	{CodeInvalidHeader, []int{422}},
	{CodeNoVendorMeter, []int{422}},
	{CodeBudgetNotFound, []int{404}},
	{CodeUnscopedBudget, []int{422}},
	{CodeInvalidKeyLimit, []int{422}},
	{CodeKeyLimitNotFound, []int{404}},
	{CodeInvalidStamp, []int{422}},
	{CodeUnknownMessage, []int{422}},
	{CodeStaleCharge, []int{422}},
	{CodeETAUnavailable, []int{503}},
	{CodeGone, []int{410}},
	{CodeDeclareRefused, []int{409, 422}},
	{CodeDeclareContended, []int{409}},
	{CodeProvisioningFailed, []int{502}},
	{CodeStoreFailed, []int{502}},
	{CodeInvalidPrecondition, []int{400}},
	{CodePreconditionFailed, []int{412}},
	{CodeInvalidRevision, []int{400}},
	{CodeRevisionNotFound, []int{404}},
	{CodeRevisionNotRestorable, []int{409}},
	{CodeNoHistory, []int{503}},
	{CodeHistoryFailed, []int{502}},
	{CodeHistoryTimeout, []int{504}},
	{CodeNotWatching, []int{409}},
	{CodeWatchNotStarted, []int{409}},
	{CodePreviewUnsupported, []int{422}},
	{CodeAllowanceTooSmall, []int{422}},
	{CodeRecordingCostChanged, []int{409}},
	{CodeShadowInvalid, []int{422}},
	{CodeAIOff, []int{503}},
	{CodeAIBusy, []int{429}},
	{CodeAIRequest, []int{422}},
	{CodeAIStore, []int{502}},
	{CodeAIDraftInvalid, []int{502}},
	{CodeAIAccess, []int{502}},
	{CodeAIQuota, []int{502}},
	{CodeAIConfiguration, []int{502}},
	{CodeAIUnfinished, []int{502}},
	{CodeAITimeout, []int{502}},
	{CodeAIReply, []int{502}},
	{CodeAIUnavailable, []int{502}},
	{CodeSignInRequired, []int{401}},
	{CodeSignInNotConfigured, []int{503}},
	{CodeReadOnly, []int{403}},
	{CodeCrossSite, []int{403}},
	{CodeSignInState, []int{400}},
	{CodeSignInRefused, []int{400}},
	{CodeSignInProviderFailed, []int{502}},
	{CodeSignInToken, []int{401}},
	{CodeAccountNotAllowed, []int{403}},
	{CodeLiveUnavailable, []int{503}},
	{CodeLiveTooMany, []int{429}},
	{CodeFileNotFound, []int{404}},
	{CodeWebAppMissing, []int{503}},
}

var codeStatuses = func() map[Code][]int {
	m := make(map[Code][]int, len(Codes))
	for _, c := range Codes {
		m[c.Code] = c.Statuses
	}
	return m
}()

// Known reports whether c is in the catalogue and, when status is not 0,
// whether status is one of c's statuses.
func (c Code) Known(status int) bool {
	statuses, ok := codeStatuses[c]
	if !ok || status == 0 {
		return ok
	}
	for _, s := range statuses {
		if s == status {
			return true
		}
	}
	return false
}
