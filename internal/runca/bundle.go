package runca

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
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
// bundle does not wait for them. Where they come from files (the system's
// bundle, not a folder of certificates), the bundle made of them is kept
// in the user's cache folder (KeptDir) under a name made of those files'
// identities (path, device, inode, size, time), and later runs copy it
// from there instead of reading and checking every certificate again: in
// a new process that took milliseconds (the memory it needs is new too).
type Roots struct {
	done chan struct{}
	env  map[string]string
	pem  []byte
	kept string // the kept copy of pem, when it is one (pem is then not read)
}

// StartRoots reads the roots of env in the background.
func StartRoots(env map[string]string) *Roots {
	r := &Roots{done: make(chan struct{}), env: env}
	go func() {
		defer close(r.done)
		r.load(KeptDir())
	}()
	return r
}

// ReadRoots reads the roots of env now.
func ReadRoots(env map[string]string) *Roots {
	r := &Roots{done: make(chan struct{}), env: env}
	r.load(KeptDir())
	close(r.done)
	return r
}

// KeptDir is the folder of the kept bundles of roots: jukebox/roots in the
// user's cache folder, "" (none kept) without one or with JUKEBOX_NO_CACHE.
// A booth hides jukebox's cache folder from its agent and lets it write
// no folder holding it: it cannot plant a bundle there for a later run.
func KeptDir() string {
	if v := os.Getenv("JUKEBOX_NO_CACHE"); v != "" && v != "0" && v != "false" {
		return ""
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "jukebox", "roots")
}

// load reads the roots, or finds them kept in dir (none when dir is "").
func (r *Roots) load(dir string) {
	files, name := openSources(r.env)
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if dir == "" || name == "" {
		r.pem = readRoots(r.env)
		return
	}
	kept := filepath.Join(dir, name)
	if fi, err := os.Lstat(kept); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
		r.kept = kept
		return
	}
	data := make([][]byte, len(files))
	for i, f := range files {
		data[i], _ = io.ReadAll(f) // what was opened and named, not the path again
	}
	r.pem = fromFiles(data)
	keep(dir, name, r.pem)
}

// keptMax is how many kept bundles a folder holds: one per set of
// roots files, and those change rarely (a user's bundle variables in
// another project, a system update).
const keptMax = 8

// keep writes pem as dir/name, whole or not at all, and removes the
// oldest kept bundles past keptMax, and anything else there older than a
// day (a write cut short).
func keep(dir, name string, pem []byte) {
	if len(pem) == 0 || os.MkdirAll(dir, 0o700) != nil {
		return
	}
	f, err := os.CreateTemp(dir, ".keep-*")
	if err != nil {
		return
	}
	_, err = f.Write(pem)
	if err = errors.Join(err, f.Close()); err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(f.Name())
	}
	entries, _ := os.ReadDir(dir)
	var kept []fs.FileInfo
	for _, e := range entries {
		fi, err := e.Info()
		switch {
		case err != nil || e.Name() == name:
		case strings.HasPrefix(e.Name(), "roots-"):
			kept = append(kept, fi)
		case time.Since(fi.ModTime()) > 24*time.Hour:
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	slices.SortFunc(kept, func(a, b fs.FileInfo) int { return b.ModTime().Compare(a.ModTime()) })
	for _, fi := range kept[min(len(kept), keptMax-1):] { // name is one of keptMax
		os.Remove(filepath.Join(dir, fi.Name()))
	}
}

// BundleOf is the bundle of the roots r and the CA's certificate.
func (c *CA) BundleOf(r *Roots) []byte {
	var out bytes.Buffer
	r.writeTo(&out)
	out.Write(c.certPEM)
	return out.Bytes()
}

// WriteBundle writes the bundle of the roots r and the CA's certificate
// to a new file at path (mode 0644: certificates only, nothing secret).
func (c *CA) WriteBundle(path string, r *Roots) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	err = r.writeTo(f)
	if err == nil {
		_, err = f.Write(c.certPEM)
	}
	return errors.Join(err, f.Close())
}

// writeTo writes the roots to w: the kept copy where there is one (a
// file to a file is copied by the kernel), else what was read. A kept
// copy removed since it was found is read again from the sources.
func (r *Roots) writeTo(w io.Writer) error {
	<-r.done
	if r.kept != "" {
		if f, err := os.Open(r.kept); err == nil {
			defer f.Close()
			_, err = io.Copy(w, f)
			return err
		}
		_, err := w.Write(readRoots(r.env))
		return err
	}
	_, err := w.Write(r.pem)
	return err
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
func readRoots(env map[string]string) []byte {
	roots := systemRoots(env)
	var extra [][]byte
	for _, f := range userBundles(env) {
		if data, err := os.ReadFile(f); err == nil {
			extra = append(extra, data)
		}
	}
	return fromFiles(append(roots, extra...))
}

// fromFiles is the roots of files (the system's, then the user's
// bundles), each certificate once.
func fromFiles(files [][]byte) []byte {
	size := 0
	for _, data := range files {
		size += len(data)
	}
	var out bytes.Buffer
	out.Grow(size + size/8) // re-encoded blocks are about as long as read
	seen := map[[32]byte]bool{}
	for _, data := range files {
		addPEM(&out, seen, data)
	}
	return out.Bytes()
}

// userBundles are the files the user's variables in env (BundleEnv) name,
// each once: machines often name one file in every variable.
func userBundles(env map[string]string) []string {
	var out []string
	for _, name := range BundleEnv {
		if f := env[name]; f != "" && !slices.Contains(out, filepath.Clean(f)) {
			out = append(out, filepath.Clean(f))
		}
	}
	return out
}

// openSources opens the files the roots are read from, as readRoots reads
// them: the system's bundle first, then the user's bundles that open. name
// is what the bundle made of them is kept as, made of their identities;
// "" where the system keeps its roots in no one file (a folder of
// certificates), and then no file is open.
func openSources(env map[string]string) (files []*os.File, name string) {
	sys := openSystemBundle()
	if sys == nil {
		return nil, ""
	}
	files = []*os.File{sys}
	for _, p := range userBundles(env) {
		if f, err := os.Open(p); err == nil {
			files = append(files, f)
		}
	}
	h := sha256.New()
	h.Write([]byte("jukebox roots 1\x00"))
	for _, f := range files {
		fi, err := f.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			for _, f := range files {
				f.Close()
			}
			return nil, ""
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00%s\x00", f.Name(), fi.Size(), fi.ModTime().UnixNano(), fileID(fi))
	}
	return files, fmt.Sprintf("roots-%x.pem", h.Sum(nil)[:12])
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
