//go:build !unix

package sandbox

import "io/fs"

// As in platform_nounix.go: there is no booth here, so nothing owns keys
// or journals; these only keep the package building.

func fileOwner(fs.FileInfo) (int, bool)    { return -1, false }
func devIno(fs.FileInfo) (dev, ino uint64) { return 0, 0 }
