package runca

import (
	"bytes"
	"crypto/sha256"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
)

// BundleEnv are the variables that name a file of trusted certificates
// for the common runtimes and tools: OpenSSL (and so curl, Python's ssl,
// Ruby), Python requests, curl, Node.js (added to its own roots), git,
// the AWS SDKs and CLI, pip, httplib2, Deno, Cargo, gRPC's C core
// (Python's and Node's grpc), Python's websocket-client.
var BundleEnv = []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
	"GIT_SSL_CAINFO", "AWS_CA_BUNDLE", "PIP_CERT", "HTTPLIB2_CA_CERTS", "DENO_CERT", "CARGO_HTTP_CAINFO",
	"GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", "WEBSOCKET_CLIENT_CA_BUNDLE"}

// Bundle is the PEM bundle a run's agent trusts: the system's roots, the
// certificates of every bundle the user's own variables (env, BundleEnv
// and SSL_CERT_DIR) named, then the CA's. Only CERTIFICATE blocks are
// kept, each once; a file that cannot be read is skipped.
func (c *CA) Bundle(env map[string]string) []byte {
	roots := systemRoots(env)
	size := len(c.certPEM)
	for _, data := range roots {
		size += len(data)
	}
	var out bytes.Buffer
	out.Grow(size + size/8) // re-encoded blocks are about as long as read
	seen := map[[32]byte]bool{}
	add := func(data []byte) {
		for {
			var b *pem.Block
			b, data = pem.Decode(data)
			if b == nil {
				return
			}
			if sum := sha256.Sum256(b.Bytes); b.Type == "CERTIFICATE" && !seen[sum] {
				seen[sum] = true
				pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: b.Bytes}) // a bytes.Buffer cannot fail
			}
		}
	}
	for _, data := range roots {
		add(data)
	}
	read := map[string]bool{} // machines often name one file in every variable: read it once
	for _, name := range BundleEnv {
		f := env[name]
		if f == "" || read[filepath.Clean(f)] {
			continue
		}
		read[filepath.Clean(f)] = true
		if data, err := os.ReadFile(f); err == nil {
			add(data)
		}
	}
	add(c.certPEM)
	return out.Bytes()
}

// readDirs reads every file in dirs (a certificate directory).
func readDirs(dirs []string) [][]byte {
	var out [][]byte
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() || !(strings.HasSuffix(e.Name(), ".pem") || strings.HasSuffix(e.Name(), ".crt")) {
				continue
			}
			if data, err := os.ReadFile(filepath.Join(d, e.Name())); err == nil {
				out = append(out, data)
			}
		}
	}
	return out
}
