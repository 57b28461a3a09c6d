package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/jukebox-os/jukebox/bench/internal/benchutil"
	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// envHTTPS holds the HTTPS measurement's parameters (httpsParams) in its
// child, which runs under engine.Record.
const envHTTPS = "JUKEBOX_BENCH_PROXY_HTTPS"

// The targets of issue 29.
const (
	targetHTTPSWarm  = time.Millisecond     // per request after the first to a host
	targetHTTPSFirst = 5 * time.Millisecond // on the first request to a host
	targetHTTPSTTFC  = time.Millisecond     // streamed first chunk
)

// httpsParams say what the HTTPS child measures and where.
type httpsParams struct {
	Out     string   `json:"out"`   // the samples file
	Addr    string   `json:"addr"`  // the TLS server, 127.0.0.1:PORT
	CertPEM string   `json:"cert"`  // its certificate (for example.com and 127.0.0.1)
	Hosts   []string `json:"hosts"` // names each first request goes to, one each side
	Calls   int      `json:"calls"` // warm requests per side
	TTFC    int      `json:"ttfc"`  // streamed requests per side
}

// httpsSamples are the child's measurements, in nanoseconds.
type httpsSamples struct {
	WarmDirect, WarmProxy   []int64
	FirstDirect, FirstProxy []int64
	TTFCDirect, TTFCProxy   []int64
}

// httpsBench measures HTTPS through jukebox's forward proxy (a CONNECT
// tunnel ended with the run's CA, the upstream routed to the same server)
// against the same requests made directly, to one loopback TLS server.
func httpsBench(calls, ttfc, hosts int) error {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(httpsHandler))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	dir, err := os.MkdirTemp("", "proxy-https-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p := httpsParams{Out: filepath.Join(dir, "samples.json"), Addr: srv.Listener.Addr().String(), CertPEM: string(certPEM), Calls: calls, TTFC: ttfc}
	routes := map[string]string{"example.com": "https://" + p.Addr}
	for i := range 2 * hosts {
		h := fmt.Sprintf("h%d.example.com", i)
		p.Hosts, routes[h] = append(p.Hosts, h), "https://"+p.Addr
	}
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	s, err := httpsRecord(p, routes, roots, filepath.Join(dir, "run.jbx"))
	if err != nil {
		return err
	}
	httpsReport(p, s)
	return nil
}

// httpsRecord runs the child under engine.Record, its hosts routed to the
// server (verified with roots), and reads its samples.
func httpsRecord(p httpsParams, routes map[string]string, roots *x509.CertPool, tape string) (*httpsSamples, error) {
	pj, _ := json.Marshal(p)
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	o := engine.RunOptions{Argv: []string{exe}, Env: append(os.Environ(), envHTTPS+"="+string(pj)), Stdout: os.Stdout, Stderr: os.Stderr,
		Name: "bench-proxy-https", Routes: routes, UpstreamRoots: roots}
	res, err := engine.Record(context.Background(), engine.RecordOptions{RunOptions: o, Tape: tape, Sync: tapefmt.SyncStep})
	if err != nil {
		return nil, err
	}
	if res.End.ExitCode != 0 {
		return nil, fmt.Errorf("child exited with %d", res.End.ExitCode)
	}
	b, err := os.ReadFile(p.Out)
	if err != nil {
		return nil, err
	}
	var s httpsSamples
	return &s, json.Unmarshal(b, &s)
}

// httpsHandler answers /small with a short body and /stream with a
// server-sent event stream whose first event is sent at once.
func httpsHandler(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/stream" {
		io.WriteString(w, `{"ok":true}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for i := range 3 {
		fmt.Fprintf(w, "data: %d\n\n", i)
		w.(http.Flusher).Flush()
	}
}

func httpsReport(p httpsParams, s *httpsSamples) {
	fmt.Printf("HTTPS through the forward proxy (CONNECT, run CA) vs direct, same loopback TLS server (HTTP/2)\n")
	fmt.Printf("%d warm requests, %d first requests to new hosts, %d streams per side\n", p.Calls, len(p.Hosts)/2, p.TTFC)
	fmt.Printf("%-34s %11s %11s %11s %9s %s\n", "", "direct", "proxy", "overhead", "px/direct", "target")
	line := func(name string, d, x []int64, target time.Duration) {
		md, mx := medianD(d), medianD(x)
		fmt.Printf("%-34s %8.3f ms %8.3f ms %8.3f ms %8.2fx  < %.0f ms: %s\n", name, benchutil.MS(md), benchutil.MS(mx),
			benchutil.MS(mx-md), float64(mx)/float64(md), benchutil.MS(target), verdict(mx-md <= target))
	}
	line("request after the first, median", s.WarmDirect, s.WarmProxy, targetHTTPSWarm)
	line("first request to a host, median", s.FirstDirect, s.FirstProxy, targetHTTPSFirst)
	line("streamed, first chunk, median", s.TTFCDirect, s.TTFCProxy, targetHTTPSTTFC)
}

// httpsChild measures, alternating direct and proxied requests so that
// both see the same machine.
func httpsChild(raw string) error {
	var p httpsParams
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return err
	}
	direct, err := directClient(p)
	if err != nil {
		return err
	}
	proxied, err := proxiedClient()
	if err != nil {
		return err
	}
	var s httpsSamples
	half := len(p.Hosts) / 2
	for i := range half {
		if err := sample(direct(), "https://"+p.Hosts[i]+"/small", false, &s.FirstDirect); err != nil {
			return err
		}
		if err := sample(proxied(), "https://"+p.Hosts[half+i]+"/small", false, &s.FirstProxy); err != nil {
			return err
		}
	}
	dc, pc := direct(), proxied()
	for i := range p.Calls + p.TTFC {
		stream, d, x := i >= p.Calls, &s.WarmDirect, &s.WarmProxy
		path := "/small"
		if stream {
			path, d, x = "/stream", &s.TTFCDirect, &s.TTFCProxy
		}
		if err := sample(dc, "https://example.com"+path, stream, d); err != nil {
			return err
		}
		if err := sample(pc, "https://example.com"+path, stream, x); err != nil {
			return err
		}
	}
	b, _ := json.Marshal(s)
	return os.WriteFile(p.Out, b, 0o644)
}

// directClient makes clients that reach the server by any name, trusting
// its certificate for example.com, each with its own connections.
func directClient(p httpsParams) (func() *http.Client, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(p.CertPEM)) {
		return nil, fmt.Errorf("no server certificate")
	}
	return func() *http.Client {
		var d net.Dialer
		tr := &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "example.com"},
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return d.DialContext(ctx, network, p.Addr)
			}}
		return &http.Client{Transport: tr}
	}, nil
}

// proxiedClient makes clients that go through HTTPS_PROXY and trust
// SSL_CERT_FILE, as jukebox set them, each with its own connections.
func proxiedClient() (func() *http.Client, error) {
	pu, err := url.Parse(os.Getenv("HTTPS_PROXY"))
	if err != nil || pu.Host == "" {
		return nil, fmt.Errorf("HTTPS_PROXY %q: not set by jukebox", os.Getenv("HTTPS_PROXY"))
	}
	pem, err := os.ReadFile(os.Getenv("SSL_CERT_FILE"))
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	return func() *http.Client {
		tr := &http.Transport{ForceAttemptHTTP2: true, Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: roots}}
		return &http.Client{Transport: tr}
	}, nil
}

// sample times one GET: to the whole body, or to the first line of a
// stream.
func sample(c *http.Client, u string, stream bool, into *[]int64) error {
	start := time.Now()
	resp, err := c.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if stream {
		if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
			return err
		}
		*into = append(*into, int64(time.Since(start)))
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	*into = append(*into, int64(time.Since(start)))
	return err
}
