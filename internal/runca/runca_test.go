package runca

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestLeafVerifies: a minted certificate chains to the CA for its host,
// names an IP address as an IP, and is short-lived.
func TestLeafVerifies(t *testing.T) {
	ca, err := New()
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	for _, host := range []string{"api.openai.com:443", "127.0.0.1", "[::1]:8443"} {
		c, err := ca.Leaf(host)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Leaf.Verify(x509.VerifyOptions{DNSName: hostOnly(host), Roots: roots}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
		if life := c.Leaf.NotAfter.Sub(time.Now()); life > leafLife {
			t.Errorf("%s: valid for %v, want at most %v", host, life, leafLife)
		}
	}
}

// TestLeafMintedOnce: concurrent first requests for one host get one
// certificate.
func TestLeafMintedOnce(t *testing.T) {
	ca, err := New()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([][]byte, 16)
	for i := range got {
		wg.Go(func() {
			c, err := ca.Leaf("example.test")
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = c.Certificate[0]
		})
	}
	wg.Wait()
	for _, g := range got[1:] {
		if !bytes.Equal(g, got[0]) {
			t.Fatal("one host was given two certificates")
		}
	}
}

// TestBundle: the bundle holds the user's own bundle's certificates and
// the CA's, each once, and no key, even when the user's file holds one.
func TestBundle(t *testing.T) {
	ca, err := New()
	if err != nil {
		t.Fatal(err)
	}
	other, err := New()
	if err != nil {
		t.Fatal(err)
	}
	user := filepath.Join(t.TempDir(), "user.pem")
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: other.PrivateKeyDER()})
	if err := os.WriteFile(user, append(append(other.CertPEM(), keyPEM...), other.CertPEM()...), 0o600); err != nil {
		t.Fatal(err)
	}
	b := ca.Bundle(map[string]string{"REQUESTS_CA_BUNDLE": user, "SSL_CERT_DIR": t.TempDir()})
	if bytes.Count(b, other.CertPEM()) != 1 || bytes.Count(b, ca.CertPEM()) != 1 {
		t.Errorf("the bundle does not hold the user's and the run's certificates once each")
	}
	if bytes.Contains(b, []byte("PRIVATE KEY")) {
		t.Error("the bundle holds a private key")
	}
}

// TestBundleBlockForms: each certificate reaches the bundle once whatever
// the form of its block (base64 lines copied as they are, CRLF lines, a
// block with headers or long lines read by encoding/pem), and what is not
// a certificate does not: a malformed block, a TRUSTED CERTIFICATE, junk.
func TestBundleBlockForms(t *testing.T) {
	ca, err := New()
	if err != nil {
		t.Fatal(err)
	}
	var certs [][]byte
	for range 4 {
		c, err := New()
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(c.CertPEM())
		certs = append(certs, block.Bytes)
	}
	plain := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certs[0]})
	crlf := bytes.ReplaceAll(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certs[1]}), []byte("\n"), []byte("\r\n"))
	headers := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Headers: map[string]string{"Note": "x"}, Bytes: certs[2]})
	oneLine := []byte("-----BEGIN CERTIFICATE-----\n" + base64.StdEncoding.EncodeToString(certs[3]) + "\n-----END CERTIFICATE-----\n")
	rewrapped := []byte("-----BEGIN CERTIFICATE-----\n" + base64.StdEncoding.EncodeToString(certs[0]) + "\n-----END CERTIFICATE-----\n")
	bad := []byte("-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n")
	trusted := pem.EncodeToMemory(&pem.Block{Type: "TRUSTED CERTIFICATE", Bytes: []byte("trusted")})
	file := filepath.Join(t.TempDir(), "user.pem")
	all := bytes.Join([][]byte{[]byte("# a comment\n"), plain, bad, crlf, trusted, headers, rewrapped, oneLine, []byte("junk")}, nil)
	if err := os.WriteFile(file, all, 0o600); err != nil {
		t.Fatal(err)
	}
	b := ca.Bundle(map[string]string{"SSL_CERT_FILE": file, "SSL_CERT_DIR": t.TempDir()})
	got := map[string]int{}
	for rest := b; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			t.Errorf("the bundle holds a %s block", block.Type)
		}
		got[string(block.Bytes)]++
	}
	for i, c := range certs {
		if got[string(c)] != 1 {
			t.Errorf("certificate %d is in the bundle %d times, want once", i, got[string(c)])
		}
	}
	if bytes.Contains(b, []byte("not base64")) || bytes.Contains(b, []byte("junk")) {
		t.Error("the bundle holds the malformed block or the junk")
	}
}

// BenchmarkBundle builds the agent's bundle from the system's roots, as
// every run and replay does.
func BenchmarkBundle(b *testing.B) {
	ca, err := New()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		ca.Bundle(nil)
	}
}

// TestBundleOfRootsReadAhead: the bundle made from roots read ahead
// (StartRoots) is the one Bundle makes, every time it is asked for, and
// ends with the CA's certificate.
func TestBundleOfRootsReadAhead(t *testing.T) {
	ca, err := New()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	want := ca.Bundle(env)
	r := StartRoots(env)
	for range 2 {
		if got := ca.BundleOf(r); !bytes.Equal(got, want) {
			t.Fatalf("BundleOf(StartRoots) differs from Bundle: %d bytes against %d", len(got), len(want))
		}
	}
	if !bytes.HasSuffix(want, ca.certPEM) {
		t.Error("the bundle does not end with the CA's certificate")
	}
}

// TestRootsKept: the roots are kept once read from files, found kept the
// next time, and the bundle is the same either way; a user's bundle that
// changes makes another kept copy, and a kept copy removed after it was
// found is read again from the files.
func TestRootsKept(t *testing.T) {
	if runtime.GOOS == "windows" {
		testenv.Unavailable(t, "a system bundle file (Windows keeps its roots in no file)", "run on Linux or macOS")
	}
	ca, err := New()
	if err != nil {
		t.Fatal(err)
	}
	user := filepath.Join(t.TempDir(), "user.pem")
	other, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, other.CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"REQUESTS_CA_BUNDLE": user}
	load := func(dir string) *Roots {
		r := &Roots{done: make(chan struct{}), env: env}
		r.load(dir)
		close(r.done)
		return r
	}
	want := ca.BundleOf(load(""))
	if !bytes.Contains(want, other.CertPEM()) || !bytes.HasSuffix(want, ca.CertPEM()) {
		t.Fatal("the bundle lacks the user's certificate or does not end with the CA's")
	}
	dir := filepath.Join(t.TempDir(), "roots")
	first := load(dir)
	if first.kept != "" {
		t.Fatalf("nothing kept yet, but found %s", first.kept)
	}
	second := load(dir)
	if second.kept == "" {
		t.Fatal("the roots read first were not kept")
	}
	bundle := filepath.Join(t.TempDir(), "bundle.pem")
	for name, r := range map[string]*Roots{"read": first, "kept": second} {
		if got := ca.BundleOf(r); !bytes.Equal(got, want) {
			t.Errorf("%s: the bundle differs: %d bytes against %d", name, len(got), len(want))
		}
		if err := ca.WriteBundle(bundle, r); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(bundle); !bytes.Equal(got, want) {
			t.Errorf("%s: the bundle written differs: %d bytes against %d", name, len(got), len(want))
		}
	}
	// The user's bundle changes (a rotated certificate): not the kept copy.
	rotated, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, append(other.CertPEM(), rotated.CertPEM()...), 0o600); err != nil {
		t.Fatal(err)
	}
	third := load(dir)
	if third.kept != "" {
		t.Errorf("the user's bundle changed, yet the copy kept before is used: %s", third.kept)
	}
	if got := ca.BundleOf(load(dir)); !bytes.Contains(got, rotated.CertPEM()) {
		t.Error("the bundle kept after the change lacks the new certificate")
	}
	// Removed after it was found: read from the files again.
	kept := load(dir)
	if err := os.Remove(kept.kept); err != nil {
		t.Fatal(err)
	}
	if got := ca.BundleOf(kept); !bytes.Contains(got, rotated.CertPEM()) || !bytes.HasSuffix(got, ca.CertPEM()) {
		t.Error("a kept copy removed after it was found: the bundle is not the roots' and the CA's")
	}
}

// TestKeptBounded: a folder keeps at most keptMax bundles, the newest,
// and loses what a write cut short left there a day ago.
func TestKeptBounded(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-48 * time.Hour)
	for i := range keptMax + 3 {
		name := filepath.Join(dir, fmt.Sprintf("roots-%02d.pem", i))
		if err := os.WriteFile(name, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		at := old.Add(time.Duration(i) * time.Hour)
		os.Chtimes(name, at, at)
	}
	cut := filepath.Join(dir, ".keep-123")
	os.WriteFile(cut, []byte("x"), 0o600)
	os.Chtimes(cut, old, old)
	keep(dir, "roots-new.pem", []byte("pem"))
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{"roots-04.pem", "roots-05.pem", "roots-06.pem", "roots-07.pem", "roots-08.pem", "roots-09.pem",
		"roots-10.pem", "roots-new.pem"} // the newest keptMax, the one written among them
	if len(want) != keptMax || !slices.Equal(names, want) {
		t.Errorf("kept %v, want %v", names, want)
	}
}
