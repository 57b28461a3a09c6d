package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// HTTPOptions tune NewHTTPProxy, as RelayOptions tune Relay.
type HTTPOptions struct {
	// Max is the longest message recorded whole (DefaultMaxMessage when 0).
	Max int
	// Intercept, if set, sees a POST that holds one message before it goes
	// on: a non-nil answer goes back to the client as the response (JSON),
	// and the request never reaches the server (a policy's outbox or
	// refusal). A body over Max cannot be seen whole and is refused (413).
	Intercept func(Message) (answer []byte)
	// ServerSaw, if set, sees each message of the server (what a policy
	// learns from tools/list).
	ServerSaw func(Message)
}

// NewHTTPProxy is a reverse proxy to an MCP server that speaks the
// streamable HTTP transport at upstream: requests go on unchanged (the
// client talks to the proxy at the same path), and every JSON-RPC message
// in a POST body, a JSON response or a server-sent event is recorded as it
// passes. A body over o.Max bytes is passed on and recorded cut.
func NewHTTPProxy(upstream *url.URL, record Recorder, o HTTPOptions) http.Handler {
	max := o.Max
	if max <= 0 {
		max = DefaultMaxMessage
	}
	rec := record
	if o.ServerSaw != nil {
		rec = func(m Message) {
			record(m)
			if m.Dir == tapefmt.MCPFromServer {
				o.ServerSaw(m)
			}
		}
	}
	p := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: upstream.Scheme, Host: upstream.Host})
			r.Out.URL.Path, r.Out.URL.RawPath = r.In.URL.Path, r.In.URL.RawPath
			r.Out.Host = upstream.Host
		},
		FlushInterval: -1, // server-sent events go on as they come
		ModifyResponse: func(resp *http.Response) error {
			ct := resp.Header.Get("Content-Type")
			switch {
			case strings.HasPrefix(ct, "text/event-stream"):
				resp.Body = &sseTee{r: bufio.NewReader(resp.Body), c: resp.Body, rec: rec, max: max}
			case strings.HasPrefix(ct, "application/json"):
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					return err
				}
				recordBody(body, tapefmt.MCPFromServer, rec, max)
				resp.Body = io.NopCloser(bytes.NewReader(body))
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			// The server cannot be reached: the client gets a JSON-RPC
			// error for its request, as from a server that went away.
			answerUnreachable(w, r, err, rec)
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			r.Body.Close()
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			recordBody(body, tapefmt.MCPToServer, rec, max)
			if o.Intercept != nil {
				if len(body) > max {
					http.Error(w, "jukebox mcp: the message is over the size the policy can read", http.StatusRequestEntityTooLarge)
					return
				}
				if answer := o.Intercept(Message{Dir: tapefmt.MCPToServer, Raw: bytes.TrimSpace(body), Size: len(body)}); answer != nil {
					record(Message{Dir: tapefmt.MCPFromServer, Raw: answer, Size: len(answer), Problem: PolicyAnswer})
					w.Header().Set("Content-Type", "application/json")
					if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
						w.Header().Set("Mcp-Session-Id", sid)
					}
					w.Write(answer)
					return
				}
			}
			r = r.WithContext(context.WithValue(r.Context(), bodyKey{}, body))
			r.ContentLength = int64(len(body))
			r.Header.Del("Accept-Encoding") // bodies are read here: no compression to undo
			r.Body, r.GetBody = io.NopCloser(bytes.NewReader(body)), nil
		}
		p.ServeHTTP(w, r)
	})
}

// bodyKey holds a POST's body in its request's context, for the error
// answer when the server cannot be reached.
type bodyKey struct{}

// recordBody records each JSON-RPC message of an HTTP body: one, or each
// of a batch; a body that is not JSON is recorded as it is, with the
// problem said.
func recordBody(body []byte, dir tapefmt.MCPDirection, rec Recorder, max int) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return
	}
	var batch []json.RawMessage
	if trimmed[0] == '[' && json.Unmarshal(trimmed, &batch) == nil {
		for _, m := range batch {
			msg := classify(m, len(m), max)
			msg.Dir = dir
			rec(msg)
		}
		return
	}
	m := classify(trimmed, len(trimmed), max)
	m.Dir = dir
	rec(m)
}

// sseTee passes a server-sent event stream on as it is read, recording
// the data of each event once its blank line has been read.
type sseTee struct {
	r    *bufio.Reader
	c    io.Closer
	rec  Recorder
	max  int
	data []byte
	buf  []byte // read from r, not yet returned
}

func (s *sseTee) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		line, err := s.r.ReadBytes('\n')
		if len(line) > 0 {
			s.event(line)
			s.buf = line
		}
		if err != nil {
			if len(s.buf) > 0 {
				break
			}
			return 0, err
		}
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

// event takes one line of the stream: data lines are gathered, a blank
// line records the event.
func (s *sseTee) event(line []byte) {
	l := bytes.TrimRight(line, "\r\n")
	switch {
	case len(l) == 0:
		if len(s.data) > 0 {
			recordBody(s.data, tapefmt.MCPFromServer, s.rec, s.max)
			s.data = s.data[:0]
		}
	case bytes.HasPrefix(l, []byte("data:")):
		d := bytes.TrimPrefix(bytes.TrimPrefix(l, []byte("data:")), []byte(" "))
		if len(s.data) > 0 {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, d...)
	}
}

func (s *sseTee) Close() error { return s.c.Close() }

// answerUnreachable answers a request the server could not take with a
// JSON-RPC error (502), recorded.
func answerUnreachable(w http.ResponseWriter, r *http.Request, err error, rec Recorder) {
	id := json.RawMessage("null")
	if raw, _ := r.Context().Value(bodyKey{}).([]byte); raw != nil {
		if e, ok := parse(bytes.TrimSpace(raw)); ok && e.isRequest() {
			id = e.ID
		}
	}
	msg, _ := json.Marshal("jukebox mcp: the MCP server cannot be reached: " + err.Error())
	line := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":%s}}`, id, msg)
	rec(Message{Dir: tapefmt.MCPFromServer, Raw: line, Size: len(line), Problem: "answered by jukebox: the server cannot be reached"})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadGateway)
	w.Write(line)
}

// NewHTTPReplay answers a streamable-HTTP MCP client from a recorded
// session, with no server: each POSTed request gets its recorded response
// (matched as Serve matches) as JSON, notifications and responses from
// the client are taken (202), a GET (the server's own event stream) is
// not offered (405), and a DELETE ends nothing (200).
func NewHTTPReplay(r *Replayer, rec Recorder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.Method {
		case http.MethodGet:
			http.Error(w, "jukebox mcp replay: no server event stream", http.StatusMethodNotAllowed)
			return
		case http.MethodDelete:
			return
		case http.MethodPost:
		default:
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		replayPost(w, r, body, rec)
	})
}

// replayPost answers one POSTed body from the recorded session.
func replayPost(w http.ResponseWriter, r *Replayer, body []byte, rec Recorder) {
	recordBody(body, tapefmt.MCPToServer, rec, DefaultMaxMessage)
	e, ok := parse(bytes.TrimSpace(body))
	if !ok || !e.isRequest() {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	// Notifications after the response have no stream to go on here;
	// those sent while the request ran (progress) go before it, on the
	// event stream the server answered with.
	before, answer, _, held := r.answerParts(e)
	problem := ""
	if !held {
		problem = NotRecorded
	}
	if e.Method == "initialize" {
		w.Header().Set("Mcp-Session-Id", replaySession)
	}
	if len(before) == 0 {
		rec(Message{Dir: tapefmt.MCPFromServer, Raw: answer, Size: len(answer), Problem: problem})
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for i, m := range append(before, answer) {
		if i == len(before) {
			http.NewResponseController(w).Flush()
			settle() // the response apart from its notifications (notifySettle)
		}
		rec(Message{Dir: tapefmt.MCPFromServer, Raw: m, Size: len(m)})
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", m)
	}
}

// replaySession is the session id a replay gives its client.
const replaySession = "jukebox-replay"

// NewHTTPFork serves a streamable-HTTP MCP client in a fork: from the
// recorded session while live says not yet, as NewHTTPReplay does, then,
// at the first request that comes once live says so (the fork point) or
// that the session does not hold, from the live server at upstream: a
// session is opened there with the client's own initialize and
// notifications/initialized (the server's answer recorded, not passed
// on: the client has its answer from the tape), and every later request
// goes to it as NewHTTPProxy sends them (o applies), under the live
// session's id. wentLive, if set, is told once.
func NewHTTPFork(r *Replayer, upstream *url.URL, rec Recorder, live func() bool, o HTTPOptions, wentLive func()) http.Handler {
	f := &httpFork{r: r, up: upstream, rec: rec, live: live, proxy: NewHTTPProxy(upstream, rec, o), wentLive: wentLive}
	return f
}

type httpFork struct {
	r        *Replayer
	up       *url.URL
	rec      Recorder
	live     func() bool
	proxy    http.Handler
	wentLive func()

	mu      sync.Mutex
	session string // the live server's, once live
	isLive  bool
}

func (f *httpFork) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var body []byte
	if req.Method == http.MethodPost {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	f.mu.Lock()
	if !f.isLive {
		e, ok := parse(bytes.TrimSpace(body))
		switch {
		case ok && e.Method == "initialize":
			f.r.initialize = append(bytes.TrimSpace(body)[:0:0], bytes.TrimSpace(body)...)
		case ok && e.Method == "notifications/initialized":
			f.r.initialized = append(bytes.TrimSpace(body)[:0:0], bytes.TrimSpace(body)...)
		}
		request := ok && e.isRequest()
		if !request || !(f.live() || !f.r.holds(e)) {
			defer f.mu.Unlock()
			switch req.Method {
			case http.MethodPost:
				replayPost(w, f.r, body, f.rec)
			case http.MethodDelete:
			default:
				http.Error(w, "jukebox mcp replay: no server event stream", http.StatusMethodNotAllowed)
			}
			return
		}
		if err := f.handshake(req.Context()); err != nil {
			f.mu.Unlock()
			answerUnreachable(w, req.WithContext(context.WithValue(req.Context(), bodyKey{}, body)), err, f.rec)
			return
		}
		f.isLive = true
		if f.wentLive != nil {
			f.wentLive()
		}
	}
	session := f.session
	f.mu.Unlock()
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	} else {
		req.Header.Del("Mcp-Session-Id") // the replay's id means nothing to the server
	}
	f.proxy.ServeHTTP(sessionHidden{w}, req)
}

// handshake opens a session on the live server with the client's own
// initialize and notifications/initialized.
func (f *httpFork) handshake(ctx context.Context) error {
	if f.r.initialize == nil {
		return nil // the client never initialized; nothing to redo
	}
	rec := func(m Message) {
		if m.Dir == tapefmt.MCPFromServer {
			m.Problem = "the live server's answer to the initialize jukebox sent it, going live in the middle of the session; not passed to the agent"
		} else {
			m.Problem = "sent by jukebox again to the live server, going live in the middle of the session"
		}
		f.rec(m)
	}
	h := &httpSession{ctx: ctx, endpoint: f.up.String(), rec: rec, answers: map[string]envelopeResult{}}
	if err := h.send(f.r.initialize); err != nil {
		return err
	}
	if h.id == "" && len(h.answers) == 0 {
		return fmt.Errorf("%s: no answer to initialize", f.up)
	}
	f.session = h.id
	if f.r.initialized != nil {
		return h.send(f.r.initialized)
	}
	return nil
}

// sessionHidden keeps the live server's session id from the client,
// which goes on with the one the replay gave it.
type sessionHidden struct{ http.ResponseWriter }

func (s sessionHidden) WriteHeader(code int) {
	s.Header().Del("Mcp-Session-Id")
	s.ResponseWriter.WriteHeader(code)
}

func (s sessionHidden) Write(b []byte) (int, error) {
	s.Header().Del("Mcp-Session-Id")
	return s.ResponseWriter.Write(b)
}

// Flush passes flushes on: server-sent events go on as they come.
func (s sessionHidden) Flush() {
	if fl, ok := s.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}
