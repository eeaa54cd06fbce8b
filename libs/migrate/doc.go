// Package migrate maps a v1 Gate document (a TargetSpec or a GraphSpec) onto
// the v2 graph document, and reports every v1 field it mapped or ignored as a
// warning finding, so that an old declaration keeps working and its owner
// learns exactly what it now means.
package migrate
