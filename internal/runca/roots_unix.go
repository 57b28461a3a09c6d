//go:build unix

package runca

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// certFiles and certDirs are where Go's crypto/x509 looks for the
// system's roots on Linux (and where the BSDs and macOS keep a PEM copy).
var (
	certFiles = []string{
		"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Gentoo
		"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora, RHEL 6
		"/etc/ssl/ca-bundle.pem",                            // OpenSUSE
		"/etc/pki/tls/cacert.pem",                           // OpenELEC
		"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS, RHEL 7
		"/etc/ssl/cert.pem",                                 // Alpine, macOS, the BSDs
	}
	certDirs = []string{"/etc/ssl/certs", "/etc/pki/tls/certs"}
)

// systemRoots reads the system's roots as crypto/x509 finds them: the
// first bundle file there is, else the certificate directories
// (SSL_CERT_DIR, colon-separated, instead of certDirs when set).
func systemRoots(env map[string]string) [][]byte {
	for _, f := range certFiles {
		if data, err := os.ReadFile(f); err == nil {
			return [][]byte{data}
		}
	}
	dirs := certDirs
	if d := env["SSL_CERT_DIR"]; d != "" {
		dirs = filepath.SplitList(d)
	}
	return readDirs(dirs)
}

// openSystemBundle opens the system's bundle file, the one systemRoots
// reads: nil where there is none (the roots are in folders).
func openSystemBundle() *os.File {
	for _, f := range certFiles {
		if file, err := os.Open(f); err == nil {
			return file
		}
	}
	return nil
}

// fileID is the device and inode of the file fi describes.
func fileID(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprint(st.Dev, ".", st.Ino)
	}
	return ""
}
