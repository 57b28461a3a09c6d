package runca

import (
	"bytes"
	"crypto/x509"
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
