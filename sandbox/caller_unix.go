//go:build unix

package sandbox

import "golang.org/x/sys/unix"

// mayWrite says whether this process may open the file at p for writing,
// as a plain write would (its effective IDs).
func mayWrite(p string) bool {
	return unix.Faccessat(unix.AT_FDCWD, p, unix.W_OK, unix.AT_EACCESS) == nil
}
