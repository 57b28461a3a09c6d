//go:build !unix

package sandbox

import (
	"io/fs"
	"os"
)

// Stubs for the pieces that need a Unix kernel (directory descriptors,
// flock, inodes, device files, xattrs). As in platform_other.go, they
// fail with Supported's error; nothing here stages or commits.

// oNoFollow is 0: there is no portable flag to refuse a final symlink.
const oNoFollow = 0

// applier is the commit's writer; it cannot be made here.
type applier struct {
	rootFD   int
	repeat   bool
	dirTimes []DirTime
}

func newApplier(_, _ string) (*applier, error) { return nil, Supported() }
func (a *applier) close()                      {}
func (a *applier) dirFD(string) (int, error)   { return -1, Supported() }
func (a *applier) apply(int, Change) error     { return Supported() }

func takeFingerprint(string, string) (fingerprint, error) { return fingerprint{}, Supported() }
func touchMarker(string) (int64, error)                   { return 0, Supported() }
func writeNoPoll(string, int, fs.FileMode, []byte) error  { return Supported() }
func inode(fs.FileInfo) uint64                            { return 0 }
func linkCount(fs.FileInfo) uint64                        { return 0 }
func ownerChange(_, _ fs.FileInfo) string                 { return "" }
func ownedByMe(fs.FileInfo) bool                          { return false }
func entryOwner(fs.DirEntry) (int, int, bool)             { return 0, 0, false }
func infoOwner(fs.FileInfo) (int, int, bool)              { return 0, 0, false }
func lockFile(*os.File) error                             { return Supported() }
func unlockFile(*os.File) error                           { return Supported() }
func tryLockFile(*os.File) error                          { return Supported() }
func isWhiteout(fs.FileInfo) bool                         { return false }
func isOpaque(string) bool                                { return false }
func mkWhiteout(string) error                             { return Supported() }
func setOpaque(string) error                              { return Supported() }

func wasiFilePerm() fs.FileMode { return 0o666 }
func wasiDirPerm() fs.FileMode  { return 0o777 }
