package runca

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/pem"
	"maps"
	"os"
	"path/filepath"
	"slices"
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
func (c *CA) Bundle(env map[string]string) []byte { return c.BundleOf(ReadRoots(env)) }

// Roots are the trusted certificates a bundle starts with (Bundle), read
// once: StartRoots reads them while the run gets ready, so that the
// bundle does not wait for them.
type Roots struct {
	done chan struct{}
	pem  []byte
	seen map[[32]byte]bool
}

// StartRoots reads the roots of env in the background.
func StartRoots(env map[string]string) *Roots {
	r := &Roots{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.pem, r.seen = readRoots(env)
	}()
	return r
}

// ReadRoots reads the roots of env now.
func ReadRoots(env map[string]string) *Roots {
	r := &Roots{done: make(chan struct{})}
	r.pem, r.seen = readRoots(env)
	close(r.done)
	return r
}

// BundleOf is the bundle of the roots r and the CA's certificate.
func (c *CA) BundleOf(r *Roots) []byte {
	<-r.done
	out := bytes.NewBuffer(slices.Clip(r.pem))
	addPEM(out, maps.Clone(r.seen), c.certPEM)
	return out.Bytes()
}

// addPEM adds the CERTIFICATE blocks of data not seen yet to out. A block
// of base64 lines only (every system bundle's) is copied as it is, once
// its base64 decodes; any other (headers, odd layout) is read and written
// again by encoding/pem. Each certificate is known by its DER's hash.
func addPEM(out *bytes.Buffer, seen map[[32]byte]bool, data []byte) {
	var der []byte // scratch, reused for every block
	for {
		i := bytes.Index(data, pemBegin)
		if i < 0 {
			return
		}
		body := data[i+len(pemBegin):]
		j := bytes.Index(body, pemEnd)
		if j < 0 {
			return // no block ends: pem.Decode finds none either
		}
		body = body[:j]
		// base64 skips the line ends; any other byte but base64's fails.
		ok := len(body) > 1 && (body[0] == '\n' || body[0] == '\r') && body[len(body)-1] == '\n'
		if ok {
			der = slices.Grow(der[:0], base64.StdEncoding.DecodedLen(len(body)))
			n, err := base64.StdEncoding.Decode(der[:cap(der)], body)
			ok, der = err == nil && n > 0, der[:max(n, 0)]
		}
		if !ok {
			b, rest := pem.Decode(data[i:])
			if b == nil {
				return
			}
			if sum := sha256.Sum256(b.Bytes); b.Type == "CERTIFICATE" && !seen[sum] {
				seen[sum] = true
				pem.Encode(out, &pem.Block{Type: "CERTIFICATE", Bytes: b.Bytes}) // a bytes.Buffer cannot fail
			}
			data = rest
			continue
		}
		if sum := sha256.Sum256(der); !seen[sum] {
			seen[sum] = true
			out.Write(pemBegin)
			out.Write(body)
			out.Write(pemEnd)
			out.WriteByte('\n')
		}
		data = data[i+len(pemBegin)+j+len(pemEnd):]
	}
}

// The lines around a certificate's base64.
var (
	pemBegin = []byte("-----BEGIN CERTIFICATE-----")
	pemEnd   = []byte("-----END CERTIFICATE-----")
)

// readRoots reads the system's roots and the bundles env names, each
// certificate once.
func readRoots(env map[string]string) ([]byte, map[[32]byte]bool) {
	roots := systemRoots(env)
	size := 0
	for _, data := range roots {
		size += len(data)
	}
	var out bytes.Buffer
	out.Grow(size + size/8) // re-encoded blocks are about as long as read
	seen := map[[32]byte]bool{}
	for _, data := range roots {
		addPEM(&out, seen, data)
	}
	read := map[string]bool{} // machines often name one file in every variable: read it once
	for _, name := range BundleEnv {
		f := env[name]
		if f == "" || read[filepath.Clean(f)] {
			continue
		}
		read[filepath.Clean(f)] = true
		if data, err := os.ReadFile(f); err == nil {
			addPEM(&out, seen, data)
		}
	}
	return out.Bytes(), seen
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
