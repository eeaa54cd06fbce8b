//go:build !linux

package stack

// Foreground does nothing outside Linux: the terminal's Ctrl-C reaches
// every process of the foreground group, make included.
func Foreground() (restore func()) { return func() {} }
