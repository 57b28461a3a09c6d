//go:build !unix

package runca

import (
	"io/fs"
	"os"
	"path/filepath"
)

// systemRoots are, where the system keeps its roots in no file (Windows),
// only the certificate directories SSL_CERT_DIR names, if any; the user's
// own bundle variables are read by Bundle.
func systemRoots(env map[string]string) [][]byte {
	if d := env["SSL_CERT_DIR"]; d != "" {
		return readDirs(filepath.SplitList(d))
	}
	return nil
}

// openSystemBundle is nil: the system keeps its roots in no file here.
func openSystemBundle() *os.File { return nil }

// fileID is "": the bundle is never kept here (openSystemBundle).
func fileID(fs.FileInfo) string { return "" }
