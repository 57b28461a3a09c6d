package llmsim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxBody is the largest request body the server reads (the real APIs refuse
// far smaller ones, but a conversation with images can be large).
const maxBody = 32 << 20

// The endpoints, named by the path that follows the last "/v1".
const (
	epChat        = "/v1/chat/completions"
	epResponses   = "/v1/responses"
	epEmbeddings  = "/v1/embeddings"
	epModels      = "/v1/models"
	epMessages    = "/v1/messages"
	epCountTokens = "/v1/messages/count_tokens"
	epFiles       = "/v1/files"
)

var endpoints = []string{epCountTokens, epChat, epResponses, epEmbeddings, epMessages, epModels, epFiles}

// Server is a scripted stand-in for the OpenAI and Anthropic HTTP APIs. It is
// an http.Handler: mount it on any server (httptest.NewServer(llmsim.New(s)))
// or let Start listen for it. Close it to release requests held by a hang.
type Server struct {
	script *Script
	log    io.Writer
	logMu  sync.Mutex
	mu     sync.Mutex
	used   map[int]int        // rule index -> times used, for rules with "times"
	draws  map[int]*rand.Rand // rule index -> its chance draws, for rules with "chance"
	// sampling: the nth arrival of the same request gets ids of its own,
	// as a sampling model's answers differ (arrivals counts them).
	sampling bool
	arrivals map[[32]byte]int
	hits     atomic.Int64
	closing  chan struct{}
	once     sync.Once
	http     *http.Server
	url      string
}

// Option configures a Server.
type Option func(*Server)

// WithLog makes the server write one line per request to w.
func WithLog(w io.Writer) Option { return func(s *Server) { s.log = w } }

// WithSampling makes identical requests get different ids (response id,
// created time) by order of arrival, as answers of a model that samples
// differ: without it the same request always gets the same bytes.
func WithSampling() Option { return func(s *Server) { s.sampling = true } }

// New returns a server that answers from script; a nil script means
// DefaultScript.
func New(script *Script, opts ...Option) *Server {
	if script == nil {
		script = DefaultScript()
	}
	s := &Server{script: script, used: map[int]int{}, closing: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves script
// in the background. It returns the server and its root URL, such as
// "http://127.0.0.1:8931"; OpenAIBaseURL and AnthropicBaseURL give the values
// for the SDKs' environment variables.
func Start(addr string, script *Script, opts ...Option) (*Server, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("llmsim: listen: %w", err)
	}
	s := New(script, opts...)
	s.url = "http://" + ln.Addr().String()
	s.http = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go s.http.Serve(ln) //nolint:errcheck // Serve returns ErrServerClosed after Close
	return s, s.url, nil
}

// URL returns the root URL of a server made by Start, or "" for one made by New.
func (s *Server) URL() string { return s.url }

// OpenAIBaseURL returns the value for OPENAI_BASE_URL: the root URL plus "/v1".
func (s *Server) OpenAIBaseURL() string { return s.url + "/v1" }

// AnthropicBaseURL returns the value for ANTHROPIC_BASE_URL: the root URL, to
// which the Anthropic SDKs append "/v1/messages" themselves.
func (s *Server) AnthropicBaseURL() string { return s.url }

// Hits returns how many requests the server has received, well-formed or not.
func (s *Server) Hits() int64 { return s.hits.Load() }

// Close releases hanging requests and, for a server made by Start, closes its
// listener and connections at once.
func (s *Server) Close() error {
	s.once.Do(func() { close(s.closing) })
	if s.http == nil {
		return nil
	}
	return s.http.Close()
}

// Shutdown releases hanging requests and, for a server made by Start, stops
// it gracefully, waiting for requests in flight until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.once.Do(func() { close(s.closing) })
	if s.http == nil {
		return nil
	}
	return s.http.Shutdown(ctx)
}

// route finds the endpoint a path names: any prefix ending in "/v1" is
// accepted, so "/v1/chat/completions" and "/openai/v1/chat/completions" are
// the same, and so is "/v1/v1/messages" from an ANTHROPIC_BASE_URL that
// already ends in /v1.
func route(path string) (endpoint, modelID string) {
	for _, ep := range endpoints {
		if strings.HasSuffix(path, ep) {
			return ep, ""
		}
	}
	if i := strings.LastIndex(path, epModels+"/"); i >= 0 {
		if id := path[i+len(epModels)+1:]; id != "" {
			return epModels, id
		}
	}
	return "", ""
}

// ServeHTTP answers one API request. It never panics on bad input: malformed
// bodies get a 400 with the provider's error JSON.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.hits.Add(1)
	ep, modelID := route(r.URL.Path)
	anthropic := ep == epMessages || ep == epCountTokens || r.Header.Get("anthropic-version") != ""
	if ep == "" {
		s.writeError(w, ids{}, anthropic, http.StatusNotFound, &reqError{msg: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path)})
		return
	}
	wantMethod := http.MethodPost
	if ep == epModels {
		wantMethod = http.MethodGet
	}
	if r.Method != wantMethod {
		w.Header().Set("Allow", wantMethod)
		s.writeError(w, ids{}, anthropic, http.StatusMethodNotAllowed, &reqError{msg: fmt.Sprintf("Method %s not allowed for %s", r.Method, ep)})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		status := http.StatusBadRequest
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			status = http.StatusRequestEntityTooLarge
		}
		s.writeError(w, ids{}, anthropic, status, &reqError{msg: "could not read the request body: " + err.Error()})
		return
	}
	g := newIDs(s.script, ep+"\x00"+modelID, body)
	if s.sampling {
		g = s.arrival(g)
	}
	switch ep {
	case epModels:
		s.serveModels(w, g, anthropic, modelID)
	case epEmbeddings:
		s.serveEmbeddings(w, g, body)
	case epCountTokens:
		s.serveCountTokens(w, g, body)
	case epFiles:
		s.serveFiles(w, r, g, body)
	default:
		s.serveChatLike(w, r, ep, g, body)
	}
}

// parsers reads each chat-like endpoint's request.
var parsers = map[string]func([]byte) (*conversation, *reqError){
	epChat: parseChat, epResponses: parseResponses, epMessages: parseMessages,
}

func (s *Server) serveChatLike(w http.ResponseWriter, r *http.Request, ep string, g ids, body []byte) {
	anthropic := ep == epMessages
	c, rerr := parsers[ep](body)
	if rerr != nil {
		s.logf("%s %s -> 400 %s", r.Method, ep, rerr.msg)
		s.writeError(w, g, anthropic, http.StatusBadRequest, rerr)
		return
	}
	a := s.answerFor(c)
	s.logf("%s %s model=%s stream=%t rule=%s", r.Method, ep, c.model, c.stream, a.rule)
	x := &exchange{conv: c, ans: a, ids: g, inTokens: inputTokens(c, len(body)),
		em: newEmitter(w, r.Context(), s.closing, a.fail, a.pacing)}
	s.setHeaders(w, g, anthropic, a.rule)
	if f := a.fail; f != nil && f.status != 0 {
		if f.retryAfter > 0 {
			w.Header().Set("Retry-After", fmt.Sprint(f.retryAfter))
		}
		s.writeFailure(w, g, anthropic, f)
		return
	}
	switch {
	case ep == epChat && c.stream:
		x.chatStream()
	case ep == epChat:
		x.chatJSON()
	case ep == epResponses && c.stream:
		x.responsesStream()
	case ep == epResponses:
		x.responsesJSON()
	case c.stream:
		x.messagesStream()
	default:
		x.messagesJSON()
	}
}

// setHeaders writes the response headers the provider would send.
func (s *Server) setHeaders(w http.ResponseWriter, g ids, anthropic bool, rule string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h["Date"] = nil // net/http would add the wall clock; responses stay byte-for-byte reproducible
	if rule != "" {
		h.Set("X-Llmsim-Rule", rule)
	}
	if anthropic {
		h.Set("Request-Id", g.requestID())
		h.Set("Anthropic-Organization-Id", "00000000-0000-4000-8000-00000000115a")
		return
	}
	h.Set("X-Request-Id", g.requestID())
	h.Set("Openai-Organization", "llmsim")
	h.Set("Openai-Processing-Ms", fmt.Sprint(g.processingMS()))
	h.Set("Openai-Version", "2020-10-01")
}

func (s *Server) logf(format string, args ...any) {
	if s.log != nil {
		s.logMu.Lock()
		defer s.logMu.Unlock()
		fmt.Fprintf(s.log, "llmsim: "+format+"\n", args...)
	}
}
