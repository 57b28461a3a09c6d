//go:build !linux

package sandbox

import (
	"io/fs"
	"time"
)

// Stubs of meta_linux.go. As in platform_other.go, nothing stages or
// commits here (Supported fails first); these keep the package building.

func userXattrs(string) (map[string][]byte, error)     { return nil, nil }
func copyXattrs(_, _ string) error                     { return nil }
func xattrsAt(int, string) (map[string][]byte, error)  { return nil, Supported() }
func setXattrsAt(int, string, map[string][]byte) error { return Supported() }
func stripUncommitted(string) error                    { return Supported() }
func setMtimeAt(int, string, time.Time) error          { return Supported() }
func ctimeOf(fs.FileInfo) int64                        { return 0 }
func setLinkMtime(string, time.Time) error             { return Supported() }
