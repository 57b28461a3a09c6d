package runca

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
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
