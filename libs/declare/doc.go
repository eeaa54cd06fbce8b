// Package declare is Gate's declaration compiler: it parses a graph document
// (mapping v1 documents), checks every declare rule, and compiles the plan.
package declare
