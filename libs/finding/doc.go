// Package finding holds the structured result of a declare rule: which rule
// fired, how bad it is, where in the document, what it computed, and the fix.
package finding
