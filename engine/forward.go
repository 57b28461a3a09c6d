package engine

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jukebox-os/jukebox/controlapi"
	"github.com/jukebox-os/jukebox/internal/runca"
	"github.com/jukebox-os/jukebox/llmwire"
)

// PathFormPrefix starts the path form of a forwarded request: a client
// that cannot be given a proxy (Node's fetch, through the preload) sends
// METHOD /_jbx/{scheme}/{host}/{path...}?{query} to the proxy itself.
const PathFormPrefix = "/_jbx/"

// handshakeTimeout bounds a tunnel's TLS handshake.
const handshakeTimeout = 10 * time.Second

// forwarder is the forward proxy half of the proxy: the run's CA and the
// server that reads the requests inside CONNECT tunnels.
type forwarder struct {
	p       *proxy
	ca      *runca.CA
	ln      *connListener
	srv     *http.Server
	tunnels sync.Map // net.Conn handed to srv -> *tunnel
	own     sync.Map // host:port of jukebox's own endpoints (POST /v1/endpoint) -> true
	// tlsFailed counts the tunnels whose TLS handshake with the agent
	// failed; tlsErr is the first one's host and error.
	tlsFailed atomic.Uint64
	tlsErr    atomic.Pointer[string]
	// opening counts the tunnels being opened (their first byte read, the
	// handshake done), which close waits for so that the result counts
	// a failed handshake of an agent that exited at once.
	opening inFlight
}

// inFlight counts work in progress that can be waited for to end; unlike
// a sync.WaitGroup, new work may start while someone waits.
type inFlight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0
}

func (c *inFlight) add() {
	c.mu.Lock()
	if c.n == 0 {
		c.idle = make(chan struct{})
	}
	c.n++
	c.mu.Unlock()
}

func (c *inFlight) done() {
	c.mu.Lock()
	if c.n--; c.n == 0 {
		close(c.idle)
	}
	c.mu.Unlock()
}

// wait returns once nothing is in flight, or when ctx is done.
func (c *inFlight) wait(ctx context.Context) {
	c.mu.Lock()
	idle, n := c.idle, c.n
	c.mu.Unlock()
	if n > 0 {
		select {
		case <-idle:
		case <-ctx.Done():
		}
	}
}

// tunnel is where the requests on one CONNECT tunnel go.
type tunnel struct{ scheme, host string }

type tunnelKey struct{}

// onRunCA, when set (by tests), is told of each run's CA.
var onRunCA func(*runca.CA)

func newForwarder(p *proxy) (*forwarder, error) {
	ca, err := runca.New()
	if err != nil {
		return nil, err
	}
	if onRunCA != nil {
		onRunCA(ca)
	}
	f := &forwarder{p: p, ca: ca, ln: newConnListener(p.ln.Addr())}
	f.srv = &http.Server{ReadHeaderTimeout: 30 * time.Second,
		TLSConfig: &tls.Config{NextProtos: []string{"h2", "http/1.1"}}, // serve h2 on the tunnels that chose it
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t, ok := r.Context().Value(tunnelKey{}).(*tunnel)
			if !ok {
				apiError(w, http.StatusInternalServerError, "jukebox: a tunnel lost its host")
				return
			}
			p.serveForward(w, r, t.scheme, t.host, r.URL.Path, r.URL.EscapedPath())
		}),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			t, _ := f.tunnels.LoadAndDelete(c)
			ctx = context.WithValue(ctx, tunnelKey{}, t)
			return context.WithValue(ctx, connKey{}, &connPlace{id: p.conns.Add(1)})
		}}
	go f.srv.Serve(f.ln)
	return f, nil
}

// close waits for the tunnels being opened, then stops their server.
func (f *forwarder) close(ctx context.Context) {
	f.opening.wait(ctx)
	if f.srv.Shutdown(ctx) != nil {
		f.srv.Close()
	}
}

// forward serves r when it is a forward proxy request: CONNECT, an
// absolute-form request, or the path form. It says whether it did.
func (p *proxy) forward(w http.ResponseWriter, r *http.Request) bool {
	switch {
	case r.Method == http.MethodConnect && p.fwd == nil:
		apiError(w, http.StatusMethodNotAllowed, "jukebox: this handler serves no CONNECT tunnels")
	case r.Method == http.MethodConnect:
		p.fwd.connect(w, r)
	case r.URL.IsAbs() && r.URL.Host != p.addr() && !toJukebox(r):
		p.serveForward(w, r, r.URL.Scheme, r.URL.Host, r.URL.Path, r.URL.EscapedPath())
	case strings.HasPrefix(r.URL.Path, PathFormPrefix):
		scheme, rest, _ := strings.Cut(r.URL.Path[len(PathFormPrefix):], "/")
		host, path, _ := strings.Cut(rest, "/")
		escaped := strings.TrimPrefix(r.URL.EscapedPath(), PathFormPrefix+scheme+"/"+host)
		if (scheme != "http" && scheme != "https") || host == "" {
			apiError(w, http.StatusBadRequest, "jukebox: want "+PathFormPrefix+"{http|https}/{host}/{path}, got "+r.URL.Path)
			return true
		}
		p.serveForward(&pathFormWriter{ResponseWriter: w, scheme: scheme, host: host}, r, scheme, host, "/"+path, escaped)
	default:
		return false
	}
	return true
}

// serveForward serves a request for scheme://host: a model call when
// llmwire recognises it, else plain HTTP.
func (p *proxy) serveForward(w http.ResponseWriter, r *http.Request, scheme, host, path, escaped string) {
	host = trimDefaultPort(scheme, strings.ToLower(host))
	if _, port, _ := net.SplitHostPort(p.addr()); host == p.addr() || host == "localhost:"+port {
		apiError(w, http.StatusBadRequest, "jukebox: its own endpoints are reached directly, not through its proxy (NO_PROXY)")
		return
	}
	if escaped == "" || escaped[0] != '/' {
		escaped = path
	}
	if _, own := p.fwd.ownAddr(host); own {
		p.fwd.passThrough(w, r, host, escaped)
		return
	}
	x := &exchange{scheme: scheme, host: host, path: path, rest: escaped, query: r.URL.RawQuery, req: r}
	if rec, ok := llmwire.Recognize(host, path); ok {
		if x.provider, ok = providerByName(rec.Provider); !ok {
			x.provider = provider{Name: rec.Provider}
		}
		p.serveCall(w, r, x)
		return
	}
	x.plain = true
	p.servePlain(w, r, x)
}

// pathFormWriter points a redirect's Location for a path-form client back
// at the path form, which the client would otherwise follow past jukebox.
type pathFormWriter struct {
	http.ResponseWriter
	scheme, host string
}

// WriteHeader rewrites Location, then writes the header. The Location
// the server sent goes beside it (LocationHeader), for the preload to
// give the agent's code back: a client that does not follow redirects
// itself (fetch's redirect: "manual", http.request) reads it.
func (w *pathFormWriter) WriteHeader(code int) {
	if loc := w.Header().Get("Location"); loc != "" {
		if to := pathFormLocation(loc, w.scheme, w.host); to != loc {
			w.Header().Set("Location", to)
			w.Header().Set(LocationHeader, loc)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// LocationHeader carries a redirect's Location as the server sent it to a
// path-form client, whose Location jukebox rewrote (pathFormWriter).
const LocationHeader = "X-Jukebox-Location"

// Unwrap lets http.ResponseController flush and hijack.
func (w *pathFormWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// pathFormLocation is loc, a redirect from scheme://host, as a path-form
// URL on the proxy; a relative path is left as it is.
func pathFormLocation(loc, scheme, host string) string {
	u, err := url.Parse(loc)
	switch {
	case err != nil:
		return loc
	case u.Host != "" && (u.Scheme == "http" || u.Scheme == "https" || u.Scheme == ""):
		return PathFormPrefix + cmp.Or(u.Scheme, scheme) + "/" + u.Host + u.RequestURI()
	case u.Scheme == "" && strings.HasPrefix(u.Path, "/"):
		return PathFormPrefix + scheme + "/" + host + u.RequestURI()
	}
	return loc
}

// trimDefaultPort drops :443 from an https host and :80 from an http one,
// so that a host is recorded one way however the agent reached it.
func trimDefaultPort(scheme, host string) string {
	switch {
	case scheme == "https":
		return strings.TrimSuffix(host, ":443")
	case scheme == "http":
		return strings.TrimSuffix(host, ":80")
	}
	return host
}

// connect opens a CONNECT tunnel: the agent's TLS is ended here with a
// certificate the run's CA minted for the host, and the requests inside
// (HTTP/1.1 or HTTP/2) are served by the tunnels' server. A tunnel whose
// first byte is not a TLS handshake carries plain HTTP.
func (f *forwarder) connect(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		apiError(w, http.StatusMethodNotAllowed, "jukebox: CONNECT needs HTTP/1.1")
		return
	}
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		conn.Close()
		return
	}
	f.opening.add()
	defer f.opening.done()
	bc := &bufConn{Conn: conn, r: rw.Reader}
	conn.SetReadDeadline(time.Now().Add(handshakeTimeout))
	first, err := bc.r.Peek(1)
	if err != nil {
		conn.Close()
		return
	}
	var c net.Conn = bc
	scheme := "http"
	if first[0] == 0x16 { // a TLS handshake record
		scheme = "https"
		tc := tls.Server(bc, f.ca.ServerConfig(host))
		if err := tc.HandshakeContext(r.Context()); err != nil {
			conn.Close() // a client that does not trust the run's CA (a pinned certificate) ends here
			if f.tlsFailed.Add(1) == 1 {
				e := host + ": " + err.Error()
				f.tlsErr.Store(&e)
			}
			return
		}
		c = tc
	}
	conn.SetReadDeadline(time.Time{})
	f.tunnels.Store(c, &tunnel{scheme: scheme, host: host})
	if !f.ln.put(c) {
		f.tunnels.Delete(c)
		c.Close()
	}
}

// bufConn is a connection whose first bytes were read into r already.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// connListener hands connections made elsewhere to an http.Server.
type connListener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newConnListener(addr net.Addr) *connListener {
	return &connListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

// put hands c to the server; false once the listener is closed.
func (l *connListener) put(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

// Accept waits for the next connection handed over.
func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops Accept.
func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr is the proxy's address.
func (l *connListener) Addr() net.Addr { return l.addr }

// Endpoint registers a loopback address of jukebox's own (a jukebox mcp
// --url listener): forwarded requests to it are relayed unrecorded.
func (c *control) Endpoint(_ context.Context, req controlapi.Endpoint) (controlapi.Endpoint, error) {
	host, _, err := net.SplitHostPort(req.Addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return controlapi.Endpoint{}, controlapi.BadRequest("endpoint %q is not a loopback host:port", req.Addr)
	}
	c.p.fwd.own.Store(req.Addr, true)
	return req, nil
}

// passThrough relays a forwarded request to one of jukebox's own
// endpoints as it is, streaming its answer, recording nothing.
func (f *forwarder) passThrough(w http.ResponseWriter, r *http.Request, addr, path string) {
	rp := &httputil.ReverseProxy{FlushInterval: -1, Rewrite: func(pr *httputil.ProxyRequest) {
		pr.Out.URL = &url.URL{Scheme: "http", Host: addr, Path: pr.In.URL.Path, RawPath: path, RawQuery: pr.In.URL.RawQuery}
		pr.Out.URL.Path, _ = url.PathUnescape(path)
		pr.Out.Host = addr
	}}
	rp.ServeHTTP(w, r)
}

// ownAddr reports whether host is one of the run's own endpoints
// registered with the forward proxy (jukebox mcp --url's listener).
func (f *forwarder) ownAddr(host string) (any, bool) {
	if f == nil {
		return nil, false
	}
	return f.own.Load(host)
}

// toJukebox reports whether an absolute-form request names jukebox's own
// provider routes on a loopback address (a base URL pointed at jukebox,
// reached through a proxy setting or an in-process client such as the
// replay handler's): it is routed as such, not forwarded.
func toJukebox(r *http.Request) bool {
	host := r.URL.Hostname()
	if ip := net.ParseIP(host); !(host == "localhost" || ip != nil && ip.IsLoopback()) {
		return false
	}
	for _, pr := range providers {
		if strings.HasPrefix(r.URL.Path, pr.route()+"/") {
			return true
		}
	}
	return false
}
