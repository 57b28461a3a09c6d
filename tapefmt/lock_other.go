//go:build !unix

package tapefmt

import "os"

// lockWriting takes no lock where there is no flock: a torn tape there
// reads as torn, never as recording.
func lockWriting(*os.File) {}

func unlockWriting(*os.File) {}

func recording(*os.File) bool { return false }
