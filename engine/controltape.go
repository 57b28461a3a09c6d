package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/jukebox-os/jukebox/controlapi"
	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// The control API's exchanges on the tape: every exchange a replay must
// answer (turns, markers, transactions and their operations, held MCP
// calls) is a control frame, request and answer, written after it ran.
// A replay, and a fork before its fork point, answers them from those
// frames: a recorded exchange not answered yet with the same route and
// body (after the tape's masks), identical ones in recorded order, or the
// run diverged there; nothing is staged, committed or held for real. A fork from its fork point on
// runs them live, as a recording does.

// tapedPath says whether the exchange at path (under controlapi.Prefix)
// goes on the tape: what the agent does through the API, not what it
// asks about the run (info, breaker) nor an MCP session's own traffic,
// which its mcp.message frames replay.
func tapedPath(path string) bool {
	switch path {
	case "/v1/turn", "/turn", "/v1/marker", "/marker", "/v1/tx", "/v1/mcp/outbox":
		return true
	}
	return strings.HasPrefix(path, "/v1/tx/") && !controlapi.IsBatch(path) // a batch's operations are taped one by one
}

// ownFrame says whether the exchange at path writes a frame of its own
// (agent.turn, marker), which a replayed run writes on its tape too.
func ownFrame(path string) bool {
	switch path {
	case "/v1/turn", "/turn", "/v1/marker", "/marker":
		return true
	}
	return false
}

// ServeHTTP serves the control API, putting what the agent does through
// it on the tape, or answering it from the tape in a replay.
func (c *control) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, controlapi.Prefix)
	if r.Method == http.MethodPost && controlapi.IsBatch(path) && c.api.Authorized(r) {
		// Each operation comes back here, taped (or answered from the
		// tape) as if it had come alone; writes and deletes by a taper
		// of the batch's own, beside the staging of what follows them.
		t := newTaper()
		defer t.close()
		controlapi.ServeBatch(w, r.WithContext(withTaper(r.Context(), t)), c)
		return
	}
	if r.Method != http.MethodPost || !tapedPath(path) || !c.api.Authorized(r) {
		c.api.ServeHTTP(w, r)
		return
	}
	c.exchanges.Add(1)
	t := taperOf(r.Context())
	later := t != nil && stagingOnly(path)
	if t != nil && !later {
		t.wait() // a commit or rollback is taped after the batch's writes
	}
	body, batched := controlapi.BatchedBody(r.Context()) // r.Body reads it still
	if !batched {
		read, err := io.ReadAll(io.LimitReader(r.Body, controlapi.MaxBody+1))
		if err == nil && int64(len(read)) > controlapi.MaxBody {
			err = fmt.Errorf("request body over %d MiB", controlapi.MaxBody>>20)
		}
		if err != nil {
			controlapi.Answer(w, nil, controlapi.BadRequest("%v", err))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(read))
		body = func() []byte { return read }
	}
	if c.fromTape(w, r, path, body) {
		return
	}
	live, err := c.livePath(r, path)
	if err != nil {
		controlapi.Answer(w, nil, err)
		return
	}
	r.URL.Path, r.URL.RawPath = controlapi.Prefix+live, ""
	rec := &captured{ResponseWriter: w, status: http.StatusOK}
	c.api.ServeHTTP(rec, r)
	// The answer is still buffered: the agent has not seen the staged
	// copy's path yet, so its content is as the answer left it.
	compact, file := controlapi.CompactBody(r.Context()), stagedContent(path, rec)
	tape := func() { c.tapeControl(r.Method, path, body(), compact, rec.status, rec.body.Bytes(), file) }
	if later {
		t.add(tape)
		return
	}
	tape()
}

// stagingOnly says whether the exchange at path only stages (a write or
// a delete of a transaction): nothing it does reads the tape, so a batch
// may tape it while it serves the next operation.
func stagingOnly(path string) bool {
	_, op, ok := txOf(path)
	return ok && (op == "write" || op == "delete")
}

// stagedContent is the content of the staged copy a stage-path answer
// names, nil for any other answer.
func stagedContent(path string, rec *captured) []byte {
	if !strings.HasSuffix(path, "/stage-path") || rec.status != http.StatusOK {
		return nil
	}
	var a controlapi.Staged
	if json.Unmarshal(rec.body.Bytes(), &a) != nil || a.Staged == "" {
		return nil
	}
	b, err := os.ReadFile(a.Staged)
	if err != nil {
		return nil
	}
	return b
}

// captured passes an answer on and keeps a copy.
type captured struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (c *captured) WriteHeader(status int) {
	c.status = status
	c.ResponseWriter.WriteHeader(status)
}

func (c *captured) Write(b []byte) (int, error) {
	c.body.Write(b)
	return c.ResponseWriter.Write(b)
}

// discard is an answer nobody reads.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header {
	if d.h == nil {
		d.h = http.Header{}
	}
	return d.h
}
func (*discard) Write(b []byte) (int, error) { return len(b), nil }
func (*discard) WriteHeader(int)             {}

// tapeControl writes a control frame, when the run writes a tape. The
// answer has gone to the agent already: a tape that cannot take the
// frame fails the run at its next frame, as for any frame.
func (c *control) tapeControl(method, path string, req []byte, reqCompact bool, status int, ans, file []byte) {
	if c.p.tape == nil {
		return
	}
	// controlBody's inline bodies are JSON: compacted there, or built
	// compact by the batch (reqCompact).
	f := tapefmt.Control{Method: method, Path: path, Status: status, Checked: true}
	var err error
	if f.Request, f.RequestBody, err = c.controlBody(req, reqCompact); err == nil {
		f.Answer, f.AnswerBody, err = c.controlBody(ans, false)
	}
	if err == nil && file != nil {
		f.File, err = c.p.tape.PutBlob("control file", file)
	}
	if err == nil {
		_, err = c.append(f)
	}
	if err != nil {
		c.p.wrote("control "+method+" "+path, err) // the run's result says so: a replay could not answer it
	}
	if status == http.StatusOK && method == "POST" && (strings.HasSuffix(path, "/commit") || strings.HasSuffix(path, "/rollback")) {
		c.p.endStep() // a transaction's end, its frames all written
	}
}

// controlBody is a body as a control frame keeps it: compact JSON in the
// frame, or in a blob when it is large or not JSON. A body known to be
// compact JSON already is not compacted again.
func (c *control) controlBody(b []byte, compact bool) (json.RawMessage, tapefmt.Hash, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, tapefmt.Hash{}, nil
	}
	if compact && len(b) <= tapefmt.MaxControlInline {
		return b, tapefmt.Hash{}, nil
	}
	var buf bytes.Buffer
	if !compact && json.Compact(&buf, b) == nil && buf.Len() <= tapefmt.MaxControlInline {
		return buf.Bytes(), tapefmt.Hash{}, nil
	}
	h, err := c.p.tape.PutBlob("control", b)
	return nil, h, err
}

// fromTape answers a taped exchange from the tape in a replay, or in a
// fork before its fork point; false when it runs live (a recording, a
// fork past its fork point, a tape recorded before control frames).
func (c *control) fromTape(w http.ResponseWriter, r *http.Request, path string, body func() []byte) bool {
	t, _ := c.readTape()
	if t == nil || c.live() {
		return false
	}
	recorded, err := c.ctl.load(t)
	if err != nil {
		controlapi.Answer(w, nil, controlapi.Fail(http.StatusInternalServerError, controlapi.TypeTape, err))
		return true
	}
	if len(recorded) == 0 {
		return false
	}
	tb := c.tapeBackend()
	tb.mu.Lock()
	earlier := tb.diverged
	tb.mu.Unlock()
	if earlier {
		controlapi.Answer(w, nil, controlapi.Failf(http.StatusConflict, controlapi.TypeDiverged,
			"the replay diverged before this request (see the divergence report): it is not answered from the tape"))
		return true
	}
	live := tb.m.mask.Mask(body())
	if !controlapi.CompactBody(r.Context()) { // a binary batch's write is built compact
		live = compactJSON(live)
	}
	got, d := c.ctl.take(r.Method, path, live)
	if d != nil {
		tb.mu.Lock()
		first := !tb.diverged
		tb.diverged = true
		tb.mu.Unlock()
		if first {
			tb.onDiv(d)
		}
		controlapi.Answer(w, nil, controlapi.Failf(http.StatusConflict, controlapi.TypeDiverged, "%s", d.Error()))
		return true
	}
	if ownFrame(path) {
		c.api.ServeHTTP(&discard{}, r) // the turn's or marker's frame, on this run's tape too
	}
	ans, err := c.ctl.scratch(got)
	if err != nil {
		controlapi.Answer(w, nil, controlapi.Fail(http.StatusInternalServerError, controlapi.TypeTape, err))
		return true
	}
	if path == "/v1/turn" || path == "/turn" {
		var ta controlapi.TurnAnswer
		if json.Unmarshal(ans, &ta) == nil && ta.Breaker != nil {
			c.replayTrip.CompareAndSwap(nil, ta.Breaker) // the turn tripped it when recorded
		}
	}
	if id, ok := controlapi.CommitOf(path); ok && got.status/100 == 2 {
		// What it committed, in a booth run, is in the agent's view as it
		// was when recorded: the agent finds it there again.
		if err := c.txs.replayedCommit(t, id); err != nil {
			controlapi.Answer(w, nil, controlapi.Fail(http.StatusInternalServerError, controlapi.TypeSandbox, err))
			return true
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(got.status)
	w.Write(ans)
	c.tapeControl(got.method, got.path, got.req, false, got.status, got.ans, got.file)
	return true
}

// answersTx says whether the run answers transactions from its tape: a
// replay, or a fork before its fork point, of a tape that began one.
func (c *control) answersTx() bool {
	t, _ := c.readTape()
	if t == nil || c.live() {
		return false
	}
	recorded, _ := c.ctl.load(t)
	for _, r := range recorded {
		if r.path == "/v1/tx" {
			return true
		}
	}
	return false
}

// tapeBackend is the replay's or the fork's backend.
func (c *control) tapeBackend() *tapeBackend {
	switch b := c.p.backend.(type) {
	case *tapeBackend:
		return b
	case *forkBackend:
		return &b.tapeBackend
	}
	return nil
}

// compactJSON is b compacted when it is JSON, else b.
func compactJSON(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, bytes.TrimSpace(b)) != nil {
		return b
	}
	return buf.Bytes()
}

// ctlTape are the recorded control exchanges a replay answers, in order.
type ctlTape struct {
	once sync.Once
	mu   sync.Mutex // over list and err too: the verdict reads them after the run
	list []ctlRecorded
	err  error

	used   []bool // the exchanges answered
	served int
	dir    string // scratch copies of staged files, made on first use
	// open are the exchanges answered for each transaction the tape
	// began and did not end yet, and alias the real transaction of each
	// that went live (controlfork.go).
	open  map[string][]*ctlRecorded
	alias map[string]string
}

// scratch is the answer to give for a recorded exchange: as recorded, but
// for a stage-path whose staged copy the tape holds, which names a scratch
// copy of it (the recorded staging area is gone, and a replay stages
// nothing in the workspace).
func (ct *ctlTape) scratch(r *ctlRecorded) ([]byte, error) {
	if r.file == nil {
		return r.ans, nil
	}
	var a controlapi.Staged
	if err := json.Unmarshal(r.ans, &a); err != nil {
		return nil, fmt.Errorf("control frame %d: %w", r.seq, err)
	}
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.dir == "" {
		dir, err := os.MkdirTemp("", "jukebox-replay-staged-")
		if err != nil {
			return nil, err
		}
		ct.dir = dir
	}
	a.Staged = filepath.Join(ct.dir, fmt.Sprintf("%d-%s", r.seq, filepath.Base(a.Path)))
	if err := os.WriteFile(a.Staged, r.file, 0o600); err != nil {
		return nil, err
	}
	return json.Marshal(a)
}

// close removes the scratch copies.
func (ct *ctlTape) close() {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.dir != "" {
		os.RemoveAll(ct.dir)
		ct.dir = ""
	}
}

// ctlRecorded is one recorded exchange, its bodies read.
type ctlRecorded struct {
	seq          uint64
	method, path string
	req, ans     []byte
	status       int
	file         []byte // stage-path's staged copy (tapefmt.Control.File)
}

// load reads the tape's control frames, once.
func (ct *ctlTape) load(t *tapefmt.Tape) ([]ctlRecorded, error) {
	ct.once.Do(func() {
		list, err := controlFrames(t)
		ct.mu.Lock()
		ct.list, ct.err = list, err
		ct.mu.Unlock()
	})
	return ct.list, ct.err
}

// unreadable is what of the tape did not read when an exchange was to be
// answered from it (the agent was given the error, and the run must not
// pass for the tape), nil when it read or none was asked for.
func (ct *ctlTape) unreadable() error {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return ct.err
}

// controlFrames are the control frames of t, their bodies read.
func controlFrames(t *tapefmt.Tape) ([]ctlRecorded, error) {
	var out []ctlRecorded
	for f, err := range t.Frames(tapefmt.KindControl) {
		var p tapefmt.Payload
		if err == nil {
			p, err = f.Decode()
		}
		if err != nil {
			return nil, err
		}
		x, ok := p.(*tapefmt.Control)
		if !ok {
			continue // a newer schema
		}
		r := ctlRecorded{seq: f.Seq, method: x.Method, path: x.Path, req: x.Request, ans: x.Answer, status: x.Status}
		if !x.RequestBody.IsZero() {
			r.req, err = t.Blob(x.RequestBody)
		}
		if err == nil && !x.AnswerBody.IsZero() {
			r.ans, err = t.Blob(x.AnswerBody)
		}
		if err == nil && !x.File.IsZero() {
			r.file, err = t.Blob(x.File)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// take is the first recorded exchange not answered yet with the same
// route and the same body as JSON (so identical ones go in recorded
// order), else the first that unnamedBegin takes for it, else the
// divergence: against the first such one on the route, or the first not
// answered.
func (ct *ctlTape) take(method, path string, body []byte) (*ctlRecorded, *Divergence) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.used == nil {
		ct.used = make([]bool, len(ct.list))
	}
	var near *ctlRecorded
	for _, same := range []func(*ctlRecorded) bool{
		func(r *ctlRecorded) bool { return reqmatch.FirstDiff(r.req, body) == "" },
		func(r *ctlRecorded) bool { return unnamedBegin(r, body) },
	} {
		for i := range ct.list {
			r := &ct.list[i]
			switch {
			case ct.used[i]:
			case r.method == method && r.path == path && same(r):
				ct.used[i] = true
				ct.served++
				ct.note(r)
				return r, nil
			case near == nil, r.method == method && r.path == path && (near.method != method || near.path != path):
				near = r
			}
		}
	}
	route := method + " " + controlapi.Prefix + path
	d := &Divergence{Endpoint: route, Frame: -1, Actual: route + "\n" + pretty(body)}
	if near != nil {
		d.Frame, d.Path = int64(near.seq), reqmatch.FirstDiff(near.req, body)
		if near.method != method || near.path != path {
			d.Path = "(route)"
		}
		d.Expected = near.method + " " + controlapi.Prefix + near.path + "\n" + pretty(near.req)
	}
	d.Diff = divergenceDiff(d.Expected, d.Actual)
	return nil, d
}

// unnamedBegin says whether r, a transaction's beginning recorded
// without a name (by an SDK from before names), is what body asks but
// for the name the Python SDK now gives a turn's transaction, so that
// those begun at once replay apart. Only where no recorded beginning
// matches body as it is: a tape of named ones keeps them apart.
func unnamedBegin(r *ctlRecorded, body []byte) bool {
	if r.path != "/v1/tx" {
		return false
	}
	var rec, live map[string]json.RawMessage
	if json.Unmarshal(r.req, &rec) != nil || json.Unmarshal(body, &live) != nil {
		return false
	}
	if _, named := rec["name"]; named {
		return false
	}
	if _, named := live["name"]; !named {
		return false
	}
	delete(live, "name")
	unnamed, err := json.Marshal(live)
	return err == nil && reqmatch.FirstDiff(r.req, unnamed) == ""
}

// counts are the exchanges answered from the tape and those recorded
// that nobody asked for.
func (ct *ctlTape) counts() (served, unused int) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return ct.served, len(ct.list) - ct.served
}
