package engine

import (
	"net/http"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// plainBackend answers requests that are not model calls. The live
// backend does; a backend that does not (replay, for now) makes each one
// a divergence.
type plainBackend interface {
	respondPlain(w http.ResponseWriter, x *exchange) answer
}

// plainDiverger is told of a plain request it cannot answer.
type plainDiverger interface {
	plainDiverged(d *Divergence)
}

// servePlain records a request that is not a model call as http.request
// and its answer as http.response (and, for a WebSocket, net.conn).
func (p *proxy) servePlain(w http.ResponseWriter, r *http.Request, x *exchange) {
	if _, ok := p.readExchange(w, r, x); !ok {
		return
	}
	if pr, ok := p.backend.(preparer); ok {
		pr.prepare(x) // a fork matches it against the parent before its frame
	}
	id := p.httpIDs.Add(1) - 1
	if err := p.recordHTTPRequest(x, id); err != nil {
		apiError(w, http.StatusInternalServerError, "jukebox: "+err.Error())
		return
	}
	pb, ok := p.backend.(plainBackend)
	if !ok {
		d := &Divergence{Endpoint: x.req.Method + " " + x.scheme + "://" + x.host + x.path, Frame: -1,
			Actual: x.req.Method + " " + x.scheme + "://" + x.host + x.path, Diff: "requests that are not model calls are not replayed from the tape"}
		if pd, ok := p.backend.(plainDiverger); ok {
			pd.plainDiverged(d)
		}
		apiError(w, http.StatusBadGateway, "jukebox: "+d.Error())
		p.recordHTTPResponse(x, id, answer{resp: tapefmt.LLMResponse{Status: http.StatusBadGateway, Error: d.Error()}})
		return
	}
	a := pb.respondPlain(w, x)
	p.recordHTTPResponse(x, id, a)
	a.finish(w)
	if a.abort {
		panic(http.ErrAbortHandler)
	}
}

// respondPlain answers a plain request from the tape as respond answers
// a model call: served, or off the tape (telemetry, a --live host), or a
// divergence.
func (t *tapeBackend) respondPlain(w http.ResponseWriter, x *exchange) answer { return t.respond(w, x) }

// respondPlain answers a plain request as the fork answers a model call.
func (f *forkBackend) respondPlain(w http.ResponseWriter, x *exchange) answer { return f.respond(w, x) }

// plainDiverged reports a plain request as the replay's divergence, when
// it is the first.
func (t *tapeBackend) plainDiverged(d *Divergence) {
	t.mu.Lock()
	first := !t.diverged
	t.diverged = true
	t.mu.Unlock()
	if first {
		t.onDiv(d)
	}
}

// recordHTTPRequest writes x's http.request frame.
func (p *proxy) recordHTTPRequest(x *exchange, id uint64) error {
	if p.tape == nil {
		return nil
	}
	var h tapefmt.Hash
	if len(x.body) > 0 {
		var err error
		if h, err = p.tape.PutBlob(x.scheme+"://"+x.host+x.path+" request", x.body); err != nil {
			return err
		}
	}
	_, err := p.tape.Append(0, tapefmt.HTTPRequest{ID: id, Scheme: x.scheme, Host: x.host, Method: x.req.Method,
		Path: x.path, Query: x.query, Header: x.req.Header, Body: h, Size: int64(len(x.body)), Proto: x.req.Proto,
		Conn: x.conn, ConnSeq: x.connSeq})
	return err
}

// recordHTTPResponse writes the http.response frame of request id, and
// the net.conn frame of the WebSocket it opened, if it did.
func (p *proxy) recordHTTPResponse(x *exchange, id uint64, a answer) {
	if p.tape == nil {
		return
	}
	r := a.resp
	resp := tapefmt.HTTPResponse{ID: id, Status: r.Status, Header: r.Header, Size: r.Size, Chunks: r.Chunks,
		Latency: r.Latency, Elapsed: r.Elapsed, Error: r.Error, Encoding: r.Encoding}
	if len(a.body) > 0 {
		h, chunks, err := p.tape.PutStream(x.scheme+"://"+x.host+x.path+" response", a.body, resp.Chunks)
		resp.Chunks = chunks
		if err != nil {
			resp.Error = joinProblems(resp.Error, err.Error())
			p.lostBody(x.scheme+"://"+x.host+x.path, len(a.body), err)
		}
		resp.Body = h
	}
	_, err := p.tape.Append(0, resp)
	p.wrote("http.response "+x.scheme+"://"+x.host+x.path, err)
	if a.ws != nil {
		p.recordConn(id, a.ws)
	}
}
