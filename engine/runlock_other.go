//go:build !unix

package engine

import "os"

// holdRunFolder does nothing here: no flock (the folder of a killed run
// stays, as before).
func holdRunFolder(dir string) *os.File { return nil }

// sweepRunFolders removes nothing here.
func sweepRunFolders(parent string) int { return 0 }
