package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// exchange is a recorded request, the server's messages sent while it
// ran (before: progress notifications for it, logging), its response,
// and the server's messages that followed the response (notifications)
// before the client's next message.
type exchange struct {
	method, params string // canonical
	before         [][]byte
	response       envelopeRaw
	after          [][]byte
	used           bool
}

type envelopeRaw struct {
	raw []byte
	ok  bool
}

// Replayer answers a client from a recorded session.
type Replayer struct {
	exchanges []*exchange
	// initialize and initialized are the client's handshake as it sent
	// it, for a live server started later (Handshake).
	initialize, initialized []byte
	// Diverged, when set, hears each request the session does not hold.
	Diverged func(method string, params []byte)
}

// NewReplayer reads a recorded session (its messages in order).
func NewReplayer(msgs []Message) *Replayer {
	r := &Replayer{}
	byID := map[string]*exchange{}
	byToken := map[string]*exchange{} // progress tokens of requests not yet answered
	var last, running *exchange       // answered last; asked last and not answered
	for _, m := range msgs {
		e, ok := parse(m.Raw)
		if !ok {
			continue
		}
		raw := append([]byte(nil), m.Raw...)
		switch m.Dir {
		case tapefmt.MCPToServer:
			last = nil
			if e.isRequest() {
				x := &exchange{method: e.Method, params: Canonical(e.Params)}
				r.exchanges = append(r.exchanges, x)
				byID[string(e.ID)] = x
				if tok := progressToken(e.Params, "_meta"); tok != "" {
					byToken[tok] = x
				}
				running = x
			}
		case tapefmt.MCPFromServer:
			progressOf := byToken[progressToken(e.Params, "")]
			switch {
			case e.isResponse():
				if x := byID[string(e.ID)]; x != nil && !x.response.ok {
					x.response = envelopeRaw{raw: raw, ok: true}
					delete(byID, string(e.ID))
					last = x
					if running == x {
						running = nil
					}
				}
			case progressOf != nil && !progressOf.response.ok:
				progressOf.before = append(progressOf.before, raw)
			case last != nil:
				last.after = append(last.after, raw)
			case running != nil:
				running.before = append(running.before, raw)
			}
		}
	}
	return r
}

// progressToken is the progressToken in params (under key in, "" for
// params itself: a notifications/progress), as canonical JSON; "" when
// there is none.
func progressToken(params json.RawMessage, in string) string {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	if in != "" && json.Unmarshal(p[in], &p) != nil {
		return ""
	}
	if tok, ok := p["progressToken"]; ok {
		return Canonical(tok)
	}
	return ""
}

// Canonical is JSON with object keys sorted and no spacing, so that a
// request (or a tool call's arguments) matches whatever order its writer
// put them in; nothing, or null, is {} (no arguments); text that is not
// JSON is itself.
func Canonical(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return "{}"
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v) // encoding/json sorts map keys
	return string(b)
}

// Serve reads the client's messages and answers each request from the
// session: the recorded response with the client's id, then what the
// server sent after it. Notifications and responses from the client are
// taken and dropped. A request the session does not hold (by method and
// params, each recorded request answering once, in order) gets a
// JSON-RPC error and is reported to Diverged. It returns when the client
// closes its output.
func (r *Replayer) Serve(client io.Reader, clientOut io.Writer, rec Recorder) error {
	_, err := r.ServeUntilLive(bufio.NewReaderSize(client, 64<<10), clientOut, rec, nil)
	return err
}

// ServeUntilLive serves as Serve does while live returns false (nil is
// never): the first request that comes when it returns true, or that the
// session does not hold, is returned (its line, not recorded yet) for the
// live server, with the rest of client still to read. A nil line means
// the client is done.
func (r *Replayer) ServeUntilLive(client *bufio.Reader, clientOut io.Writer, rec Recorder, live func() bool) ([]byte, error) {
	for {
		line, err := client.ReadBytes('\n')
		if len(line) == 0 {
			if err == io.EOF {
				return nil, nil
			}
			return nil, err
		}
		raw := bytes.TrimRight(line, "\r\n")
		m := classify(raw, len(raw), DefaultMaxMessage)
		m.Dir = tapefmt.MCPToServer
		e, ok := parse(raw)
		switch {
		case ok && e.Method == "initialize":
			r.initialize = append([]byte(nil), line...)
		case ok && e.Method == "notifications/initialized":
			r.initialized = append([]byte(nil), line...)
		}
		if !ok || !e.isRequest() {
			rec(m)
			if err != nil {
				return nil, nil
			}
			continue
		}
		if live != nil && live() {
			return line, nil
		}
		if live != nil && !r.holds(e) {
			return line, nil // diverged: the live server takes it from here
		}
		rec(m)
		before, resp, after, held := r.answerParts(e)
		for i, o := range slices.Concat(before, [][]byte{resp}, after) {
			if i == len(before) && i > 0 {
				settle() // the response apart from its notifications
			}
			a := Message{Dir: tapefmt.MCPFromServer, Raw: o, Size: len(o)}
			if !held {
				a.Problem = NotRecorded
			}
			rec(a) // on the tape before the client has it
			if _, err := clientOut.Write(append(o[:len(o):len(o)], '\n')); err != nil {
				return nil, err
			}
		}
		if err != nil {
			return nil, nil
		}
	}
}

// notifySettle is the pause between what a replayed request gets while it
// runs (its progress notifications) and its response. Written together,
// they reached the official TypeScript client in one read, which handles
// a notification a moment later than a response, once the response had
// removed the request's progress handler: its onprogress got none, some
// or all of the recorded progress, varying run to run (replay --strict
// failed 6 times in 6).
const notifySettle = 20 * time.Millisecond

// settle waits notifySettle (a variable for the tests).
var settle = func() { time.Sleep(notifySettle) }

// Handshake readies a server started in the middle of a session (a fork
// going live): it sends the client's initialize request, as the client
// sent it to the replay, takes the server's answer (recorded, not passed
// on: the client has its answer from the tape), then sends the
// notifications/initialized the client sent.
func (r *Replayer) Handshake(serverIn io.Writer, serverOut *bufio.Reader, rec Recorder) error {
	if r.initialize == nil {
		return nil // the client never initialized; nothing to redo
	}
	if _, err := serverIn.Write(r.initialize); err != nil {
		return err
	}
	want, _ := parse(bytes.TrimSpace(r.initialize))
	for {
		line, err := serverOut.ReadBytes('\n')
		if len(line) > 0 {
			raw := bytes.TrimRight(line, "\r\n")
			m := classify(raw, len(raw), DefaultMaxMessage)
			m.Dir, m.Problem = tapefmt.MCPFromServer, "the live server's answer to the initialize jukebox sent it, going live in the middle of the session; not passed to the agent"
			rec(m)
			if e, ok := parse(raw); ok && e.isResponse() && bytes.Equal(e.ID, want.ID) {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("the live server ended before it answered initialize: %w", err)
		}
	}
	if r.initialized != nil {
		if _, err := serverIn.Write(r.initialized); err != nil {
			return err
		}
	}
	return nil
}

// holds reports whether the session has an unused answer for request e.
func (r *Replayer) holds(e envelope) bool {
	params := Canonical(e.Params)
	for _, x := range r.exchanges {
		if !x.used && x.response.ok && x.method == e.Method && x.params == params {
			return true
		}
	}
	return false
}

// NotRecorded is the Problem of the error jukebox answers a replayed
// request with when the recorded session does not hold it: the run's
// verdict counts these (a replay that needed one did not reproduce).
const NotRecorded = "answered by jukebox: the recorded session holds no such request"

// DivergedText says that a replayed session of server held no method
// request with params (Diverged's report), the params cut short and made
// safe for a terminal: they are the agent's.
func DivergedText(server, method string, params []byte) string {
	p := string(params)
	if len(p) > 300 {
		p = p[:300] + "…"
	}
	return fmt.Sprintf("%s: replay: no recorded %s request with params %s; answered with an error",
		termtext.Sanitize(server), termtext.Sanitize(method), termtext.Sanitize(p))
}

// answerParts is what request e gets: what the server sent while the
// request ran (progress notifications, in order), the recorded response
// with e's id, then what the server sent after it; or, for a request the
// session does not hold, a JSON-RPC error (reported to Diverged), and
// held false.
func (r *Replayer) answerParts(e envelope) (before [][]byte, resp []byte, after [][]byte, held bool) {
	x := r.match(e.Method, Canonical(e.Params))
	if x == nil {
		if r.Diverged != nil {
			r.Diverged(e.Method, e.Params)
		}
		msg, _ := json.Marshal(fmt.Sprintf("jukebox mcp replay: the recorded session holds no %s request with these params", e.Method))
		return nil, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":%s}}`, e.ID, msg), nil, false
	}
	return append([][]byte(nil), x.before...), withID(x.response.raw, e.ID), x.after, true
}

// match is the first unused recorded request of this method and params.
func (r *Replayer) match(method, params string) *exchange {
	for _, x := range r.exchanges {
		if !x.used && x.response.ok && x.method == method && x.params == params {
			x.used = true
			return x
		}
	}
	return nil
}

// withID is a recorded response with its id replaced by the client's,
// every other byte as recorded.
func withID(raw []byte, id json.RawMessage) []byte {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return raw
	}
	old := fields["id"]
	if bytes.Equal(old, id) {
		return raw
	}
	// The id is replaced where it stands, so the rest stays byte for byte.
	key := []byte(`"id":`)
	if i := bytes.Index(raw, append(key, old...)); i >= 0 {
		out := append([]byte(nil), raw[:i+len(key)]...)
		out = append(out, id...)
		return append(out, raw[i+len(key)+len(old):]...)
	}
	fields["id"] = id
	b, _ := json.Marshal(fields)
	return b
}
