package declare

// The boot re-save's step and its sentinel, for the external tests.
var (
	ResaveOne  = resaveOne
	ErrChanged = errChanged
	SameJSON   = sameJSON
)
