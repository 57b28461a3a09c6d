package engine

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// hopHeaders are connection-level headers a proxy must not forward.
var hopHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Transfer-Encoding": true,
	"Te": true, "Trailer": true, "Upgrade": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
}

// live forwards calls to the real upstream and relays the answer as it
// arrives, chunk by chunk, keeping each chunk's time.
type live struct {
	client    *http.Client
	upstreams map[string]string // provider name to base URL
	routes    map[string]string // --route: host to URL, for forwarded requests
	// hostLocal refuses forwarded requests to this machine's own
	// addresses (loopback, localhost), unless routed: a booth's agent must
	// not reach the host's local services through the proxy.
	hostLocal bool
}

// newLive makes the live backend of a run with options o: its routes,
// the roots it verifies upstreams with, and the user's own proxy (in o's
// environment, before jukebox points it at itself).
func newLive(upstreams map[string]string, o RunOptions) *live {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableCompression = true // relay and record the upstream's bytes as they are
	tr.Proxy = userProxy(o.baseEnv())
	if o.UpstreamRoots != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: o.UpstreamRoots}
	}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if o.Booth != nil {
		// The name check in base is not enough: a name can resolve to
		// this machine (its host name, a wildcard DNS service), so the
		// address dialled is checked too.
		d.Control = hostLocalGuard(allowedLocal(upstreams, o.Routes, o.baseEnv()))
	}
	tr.DialContext = quickAck(d.DialContext)
	return &live{client: &http.Client{Transport: tr, CheckRedirect: noRedirects}, upstreams: upstreams, routes: o.Routes,
		hostLocal: o.Booth != nil}
}

// noRedirects hands a redirect to the agent, whose client follows it (or not).
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

func (l *live) respond(w http.ResponseWriter, x *exchange) answer {
	if x.plain && isUpgrade(x.req) {
		return l.respondPlain(w, x) // a WebSocket to a replay's --live host, or after a fork's frame
	}
	ctx := newUpstreamContext(x.req.Context())
	defer ctx.release()
	up, err := l.upstreamRequest(ctx, x)
	if err != nil {
		apiError(w, http.StatusBadGateway, "jukebox: "+err.Error())
		return answer{resp: tapefmt.LLMResponse{Status: http.StatusBadGateway, Error: err.Error()}}
	}
	resp, err := l.client.Do(up)
	if err != nil {
		// Refused, reset or timed out before an answer: the child sees the
		// same, a broken connection.
		return answer{resp: tapefmt.LLMResponse{Error: errText(err), Latency: int64(time.Since(x.start))}, abort: true, live: true}
	}
	defer resp.Body.Close()
	ctx.relaying.Store(true)
	a := relay(w, x, resp)
	a.live = true
	return a
}

// agentGoneGrace is how long the upstream's answer is read on after the
// agent closed its connection while it was being relayed (see
// upstreamContext).
const agentGoneGrace = 2 * time.Second

// upstreamContext is the context of an upstream request. It ends with
// the agent's request, but not at once once the answer is being relayed:
// an agent that closes its connection as soon as it has read a stream's
// last event (the demo agent at "data: [DONE]", any client that stops at
// its protocol's end) does so before the chunked body's terminator
// reaches jukebox, and cutting the upstream read there would record an
// answer the upstream finished as one the agent gave up on. relay reads
// on, for agentGoneGrace at most, to learn which it was: the end of the
// body (finished), or more of it (given up: not kept, since the agent
// never had it).
type upstreamContext struct {
	context.Context
	cancel   context.CancelFunc
	stop     func() bool
	relaying atomic.Bool
}

func newUpstreamContext(agent context.Context) *upstreamContext {
	ctx, cancel := context.WithCancel(context.WithoutCancel(agent))
	u := &upstreamContext{Context: ctx, cancel: cancel}
	u.stop = context.AfterFunc(agent, func() {
		if u.relaying.Load() {
			select {
			case <-time.After(agentGoneGrace):
			case <-ctx.Done(): // released
			}
		}
		cancel()
	})
	return u
}

// release ends the upstream request's context once its answer is read.
func (u *upstreamContext) release() {
	u.stop()
	u.cancel()
}

func (l *live) upstreamRequest(ctx context.Context, x *exchange) (*http.Request, error) {
	base, err := l.base(x)
	if err != nil {
		return nil, err
	}
	up, err := http.NewRequestWithContext(ctx, x.req.Method, upstreamURL(base, x.rest, x.query), bytes.NewReader(x.body))
	if err != nil {
		return nil, err
	}
	for k, vs := range x.req.Header {
		// A model call's answer is asked for uncompressed, as before; any
		// other request goes as the agent sent it.
		if !hopHeaders[k] && (x.plain || k != "Accept-Encoding") {
			up.Header[k] = vs
		}
	}
	if strings.EqualFold(x.req.Header.Get("Te"), "trailers") {
		up.Header.Set("Te", "trailers") // gRPC servers ask for it
	}
	if _, ok := up.Header["User-Agent"]; !ok {
		up.Header["User-Agent"] = []string{""} // none, as the agent sent: not Go's own
	}
	return up, nil
}

// base is the upstream base URL of x: its route (--route), else the
// origin the agent asked for, else its provider's upstream.
func (l *live) base(x *exchange) (string, error) {
	if x.host != "" {
		if u, ok := lookupRoute(l.routes, x.host); ok {
			return u, nil
		}
		if l.hostLocal && isLocalHost(x.host) {
			return "", fmt.Errorf("the booth's agent may not reach this machine's own address %s through jukebox", x.host)
		}
		return x.scheme + "://" + x.host, nil
	}
	base, ok := l.upstreams[x.provider.Name]
	if !ok {
		return "", fmt.Errorf("no upstream for %s", x.provider.Name)
	}
	return base, nil
}

// upstreamURL is the URL a request for path rest (with query) goes to at
// the upstream base: rest is appended to base's path, and base's own query
// (an API key some gateways take as ?key=) is kept, before the request's.
func upstreamURL(base, rest, query string) string {
	b, q, _ := strings.Cut(base, "?")
	switch {
	case q == "":
		q = query
	case query != "":
		q += "&" + query
	}
	u := strings.TrimSuffix(b, "/") + rest
	if q != "" {
		u += "?" + q
	}
	return u
}

// relay copies the upstream's answer to the child as it arrives and keeps
// what it copied.
func relay(w http.ResponseWriter, x *exchange, resp *http.Response) answer {
	a := answer{resp: tapefmt.LLMResponse{Status: resp.StatusCode, Header: resp.Header.Clone(), Latency: int64(time.Since(x.start))}}
	for k, vs := range resp.Header {
		if !hopHeaders[k] {
			w.Header()[k] = vs
		}
	}
	asSent(w, resp.Header)
	w.WriteHeader(resp.StatusCode)
	stream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") || (x.plain && resp.ContentLength < 0)
	rc := http.NewResponseController(w)
	var body []byte // only appended to (scanFeed)
	buf := make([]byte, 32<<10)
	// An answer that is not streamed goes on a read behind: its last
	// piece (a.tail) reaches the agent only once its frame is on the
	// tape, so the agent's next request, which may come on a new
	// connection as soon as it has the whole answer, is never written
	// before it.
	var held []byte
	gone := x.req.Context().Done() // the agent closed its connection
	var feed *scanFeed
	if stream && x.scan != nil {
		feed = newScanFeed(x.scan)
	}
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 && closed(gone) {
			// More of the answer after the agent left: it gave up on the
			// rest, which is not kept (see upstreamContext).
			a.resp.Error, a.abort = errText(context.Canceled), true
			break
		}
		if n > 0 {
			body = append(body, buf[:n]...)
			piece := buf[:n]
			if stream {
				a.resp.Chunks = append(a.resp.Chunks, tapefmt.Chunk{End: int64(len(body)), At: int64(time.Since(x.start))})
			} else {
				piece, held = held, append(held[:0:0], piece...)
			}
			if len(piece) > 0 {
				if _, werr := w.Write(piece); werr == nil {
					_ = rc.Flush()
				}
			}
			if x.onChunk != nil {
				x.onChunk(buf[:n])
			}
			if feed != nil {
				feed.add(body)
			}
		}
		if errors.Is(err, io.EOF) {
			if !stream && closed(gone) {
				// The agent left before the held last piece reached it.
				a.resp.Error, a.abort = errText(context.Canceled), true
			}
			break
		}
		if err != nil {
			a.resp.Error, a.abort = errText(err), true
			break
		}
	}
	if feed != nil {
		feed.finish(body) // before the answer's frame is written
	}
	a.body, a.tail = body, held
	for k, vs := range resp.Trailer { // gRPC's status, a checksum
		w.Header()[http.TrailerPrefix+k] = vs
	}
	a.resp.Size, a.resp.Elapsed = int64(len(body)), int64(time.Since(x.start))
	readAnswer(&a, x, resp.Header)
	return a
}

// scanFeed hands a streamed answer, as it is relayed, to the scan that
// masks it for the tape (tapefmt.StreamScan), which reads it on another
// core: what is left when the answer ends is masking its joined texts,
// not reading its events, and the agent waits for its last bytes until
// the answer's frame is written. The answer goes in pieces of at least
// scanPiece bytes, so that the scan is woken a few times an answer, not
// once a chunk.
type scanFeed struct {
	sent int // bytes of the body handed over
	ch   chan []byte
	done chan struct{}
}

const scanPiece = 4 << 10

func newScanFeed(scan *tapefmt.StreamScan) *scanFeed {
	f := &scanFeed{ch: make(chan []byte, 16), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for p := range f.ch {
			scan.Write(p)
		}
	}()
	return f
}

// add hands over what body, the answer so far, holds past what was
// handed over, once that is scanPiece bytes. The pieces are body's own
// bytes: relay only appends to body, so the scan reads bytes nothing
// writes again.
func (f *scanFeed) add(body []byte) {
	if len(body)-f.sent >= scanPiece {
		f.ch <- body[f.sent:len(body):len(body)]
		f.sent = len(body)
	}
}

// finish hands over the rest of body, the whole answer, and waits for
// the scan to read it.
func (f *scanFeed) finish(body []byte) {
	if len(body) > f.sent {
		f.ch <- body[f.sent:len(body):len(body)]
	}
	close(f.ch)
	<-f.done
}

// closed says whether done is closed, without waiting.
func closed(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// readAnswer notes the encoding the body is kept with (compressed, as
// sent) and, for a model call, the model and usage of its decoded form.
func readAnswer(a *answer, x *exchange, h http.Header) {
	if x.plain {
		a.resp.Encoding = h.Get("Content-Encoding")
		return
	}
	d := llmwire.DecodeBody(h, a.body)
	a.resp.Encoding, a.resp.Undecodable = d.Encoding, d.Undecodable
	a.resp.Model, a.resp.Usage = llmwire.ReadUsage(x.provider.Name, x.path, h, d.Text)
}

// errAgentClosed starts the error of a call the agent itself abandoned.
const errAgentClosed = "the agent closed the connection"

// errText names a transport failure the way a user would: reset, timeout,
// refused, or the error itself.
func errText(err error) string {
	s := err.Error()
	switch {
	case strings.Contains(s, "connection reset"):
		return "connection reset by upstream: " + s
	case strings.Contains(s, "unexpected EOF"):
		return "connection closed mid-response: " + s
	case strings.Contains(s, "context canceled"):
		return errAgentClosed + ": " + s
	case strings.Contains(s, "timeout"), strings.Contains(s, "deadline exceeded"):
		return "timeout: " + s
	}
	return s
}
