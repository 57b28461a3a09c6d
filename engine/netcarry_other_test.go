//go:build !linux

package engine_test

// netEchoChild has no child to run where the booth has no network namespace.
func netEchoChild() {}
