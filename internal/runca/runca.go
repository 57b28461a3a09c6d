// Package runca is the certificate authority of one run: made when the run
// starts, its key held in memory only (never written to disk, never on the
// tape, never installed anywhere), it signs short-lived certificates for
// the hosts the agent connects to through jukebox's proxy, one per host,
// minted on first use and cached for the run.
package runca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"strings"
	"sync"
	"time"
)

// Lifetimes of what the CA signs. The CA outlives any leaf it signs; a
// leaf is minted again once it is within leafRenew of its end.
const (
	caLife    = 30 * 24 * time.Hour
	leafLife  = 24 * time.Hour
	leafRenew = time.Hour
	skew      = time.Hour // NotBefore is set back this much for clocks behind ours
)

// CA is a run's certificate authority.
type CA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	leafKey *ecdsa.PrivateKey // shared by the leaves: minting one is a signature

	mu     sync.Mutex
	leaves map[string]*leaf
}

// leaf is one host's certificate; ready closes once it is minted, so that
// concurrent first requests to one host mint it once.
type leaf struct {
	ready chan struct{}
	cert  *tls.Certificate
	err   error
}

// New makes a CA with a fresh ECDSA P-256 key.
func New() (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("runca: %w", err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("runca: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "jukebox run CA " + now.UTC().Format("2006-01-02T15:04:05Z"), Organization: []string{"jukebox"}},
		NotBefore: now.Add(-skew), NotAfter: now.Add(caLife),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("runca: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("runca: %w", err)
	}
	return &CA{cert: cert, key: key, leafKey: leafKey, leaves: map[string]*leaf{},
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

// CertPEM is the CA's certificate, PEM-encoded: what the agent trusts.
func (c *CA) CertPEM() []byte { return c.certPEM }

// Certificate is the CA's certificate.
func (c *CA) Certificate() *x509.Certificate { return c.cert }

// PrivateKeyDER is the CA's key in PKCS #8 DER, for the tests that scan
// every tape for it. Nothing else in jukebox reads it.
func (c *CA) PrivateKeyDER() []byte {
	der, _ := x509.MarshalPKCS8PrivateKey(c.key)
	return der
}

// Leaf is the certificate for host (a name or an IP address; a port is
// ignored), minted on first use and cached for the run.
func (c *CA) Leaf(host string) (*tls.Certificate, error) {
	host = hostOnly(host)
	c.mu.Lock()
	l := c.leaves[host]
	if l != nil {
		select {
		case <-l.ready:
			if l.err == nil && time.Until(l.cert.Leaf.NotAfter) < leafRenew {
				l = nil // about to expire: mint it again
			}
		default:
		}
	}
	if l == nil {
		l = &leaf{ready: make(chan struct{})}
		c.leaves[host] = l
		c.mu.Unlock()
		l.cert, l.err = c.mint(host)
		close(l.ready)
		return l.cert, l.err
	}
	c.mu.Unlock()
	<-l.ready
	return l.cert, l.err
}

// mint signs a certificate for host.
func (c *CA) mint(host string) (*tls.Certificate, error) {
	if host == "" {
		return nil, fmt.Errorf("runca: no host name to certify")
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: host},
		NotBefore: now.Add(-skew), NotAfter: now.Add(leafLife),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &c.leafKey.PublicKey, c.key)
	if err != nil {
		return nil, fmt.Errorf("runca: certificate for %s: %w", host, err)
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("runca: certificate for %s: %w", host, err)
	}
	return &tls.Certificate{Certificate: [][]byte{der, c.cert.Raw}, PrivateKey: c.leafKey, Leaf: parsed}, nil
}

// ServerConfig is the TLS configuration that presents host's certificate
// (or, when the client names another server, that one's), offering HTTP/2
// and HTTP/1.1.
func (c *CA) ServerConfig(host string) *tls.Config {
	return &tls.Config{
		NextProtos: []string{"h2", "http/1.1"},
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if hello.ServerName != "" {
				return c.Leaf(hello.ServerName)
			}
			return c.Leaf(host)
		},
	}
}

// hostOnly is host without a port or IPv6 brackets, in lower case.
func hostOnly(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.Trim(host, "[]"))
}
