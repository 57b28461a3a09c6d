//go:build unix && !linux

package sandbox

import "golang.org/x/sys/unix"

// chmodByPath is Linux's O_PATH fallback of chmodAt; elsewhere a file its
// owner cannot read keeps refusing (there is no booth there anyway).
func chmodByPath(int, string, uint32) error { return unix.EACCES }

// originIs is Linux's overlay origin check; there is no overlay elsewhere.
func originIs(string, string) bool { return false }
