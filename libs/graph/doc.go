// Package graph is the v2 Gate document model (nodes, budgets, paths) and its
// strict parser, which refuses unknown or mistyped fields by JSON pointer.
package graph
