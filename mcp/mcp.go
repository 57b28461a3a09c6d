// Package mcp relays, records and replays Model Context Protocol
// sessions over stdio: newline-delimited JSON-RPC between an agent (the
// client) and a server. It is byte-faithful: each line goes on as it
// came, and the recorder sees exactly those bytes.
//
// Relay copies both ways, handing each message to a Recorder; a line that
// is not JSON, or longer than the limit, is still passed on and recorded
// (cut to the limit), with the problem said. When the server dies, every
// request still waiting, and every later one, is answered with a JSON-RPC
// error, as a client expects from a server that went away.
//
// Replayer answers a client from a recorded session, with no server: each
// request is matched to a recorded one by method and canonical params, in
// order, and gets the recorded response with the client's id; the server's
// notifications recorded after that response follow it.
package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// DefaultMaxMessage is the longest message recorded whole: 16 MiB.
const DefaultMaxMessage = 16 << 20

// Message is one line of a session as recorded.
type Message struct {
	Dir tapefmt.MCPDirection
	Raw []byte // the line, without its newline (cut to the limit when too long)
	// Problem says what is wrong with the line ("" when it is a JSON
	// object within the limit): not JSON, or too long (Size its length).
	Problem string
	Size    int
}

// Recorder hears each message as it passes. It must not keep Raw.
type Recorder func(Message)

// RelayOptions tune Relay.
type RelayOptions struct {
	// Max is the longest message recorded whole (DefaultMaxMessage when 0).
	Max int
	// ClientDone, if set, is called when the client's input ends and the
	// server's input is closed (a caller may give the server a while to
	// exit, then end it).
	ClientDone func()
	// Intercept, if set, sees each message of the client before it goes
	// on: a non-nil answer goes back to the client instead, and the
	// message never reaches the server (a policy's outbox or refusal).
	// With Intercept set, a message over Max cannot be seen whole and is
	// dropped, reported, never passed on.
	Intercept func(Message) (answer []byte)
	// ServerSaw, if set, sees each message of the server (what a policy
	// learns from tools/list).
	ServerSaw func(Message)
	// Rewrite, if set, sees each whole message of the server before the
	// client has it: a non-nil result goes to the client instead, and is
	// what is recorded (Problem Rewritten). Policy.Listing is one.
	Rewrite func(Message) []byte
}

// Relay copies messages from client to serverIn and from serverOut to
// clientOut, recording each, until the client has closed its input and
// the server its output. Once the server has gone (its output ended, or
// it stopped reading), every request it did not answer, and every later
// one, is answered with a JSON-RPC error, as a client expects from a
// server that went away.
func Relay(client io.Reader, clientOut io.Writer, serverIn io.WriteCloser, serverOut io.Reader, rec Recorder, o RelayOptions) error {
	max := o.Max
	if max <= 0 {
		max = DefaultMaxMessage
	}
	pend := newPending()
	out := lockedWriter{mu: &sync.Mutex{}, w: clientOut}
	var recMu sync.Mutex // one message at a time, in the order seen
	record := func(m Message) {
		recMu.Lock()
		rec(m)
		recMu.Unlock()
	}
	gone := &serverWriter{w: serverIn}
	answerGone := func(id json.RawMessage) {
		line := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"jukebox mcp: the MCP server has exited"}}`, id)
		record(Message{Dir: tapefmt.MCPFromServer, Raw: line, Size: len(line), Problem: "answered by jukebox: the server has exited"})
		out.Write(append(line, '\n'))
	}
	serverDone := make(chan error, 1)
	go func() {
		err := copyLines(serverOut, out, max, false, func(m Message) bool {
			m.Dir = tapefmt.MCPFromServer
			var instead []byte
			if o.Rewrite != nil && m.Problem == "" {
				if instead = o.Rewrite(m); instead != nil {
					m.Raw, m.Size, m.Problem = instead, len(instead), Rewritten
				}
			}
			record(m)
			pend.answered(m)
			if o.ServerSaw != nil {
				o.ServerSaw(m)
			}
			if instead != nil {
				out.Write(append(instead, '\n'))
			}
			return instead == nil
		})
		// The server is gone: what it never answered gets an error.
		gone.close()
		for _, id := range pend.drain() {
			answerGone(id)
		}
		serverDone <- err
	}()
	err := copyLines(client, gone, max, o.Intercept != nil, func(m Message) bool {
		m.Dir = tapefmt.MCPToServer
		record(m)
		if o.Intercept != nil {
			if m.Size > max {
				return false // dropped: copyLines said so in Problem
			}
			if answer := o.Intercept(m); answer != nil {
				record(Message{Dir: tapefmt.MCPFromServer, Raw: answer, Size: len(answer), Problem: PolicyAnswer})
				out.Write(append(answer, '\n'))
				return false
			}
		}
		if e, ok := parse(m.Raw); ok && e.isRequest() {
			pend.sent(e.ID)
			if gone.closed() { // gone now, or while this went out
				for _, id := range pend.drain() {
					answerGone(id)
				}
			}
		}
		return true
	})
	serverIn.Close()
	if o.ClientDone != nil {
		o.ClientDone()
	}
	return errors.Join(err, <-serverDone)
}

// serverWriter writes to the server until it goes: then it takes what
// comes and drops it, so that the client can still be answered.
type serverWriter struct {
	mu   sync.Mutex
	w    io.Writer
	dead bool
}

func (s *serverWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dead {
		if _, err := s.w.Write(p); err != nil {
			s.dead = true
		}
	}
	return len(p), nil
}

func (s *serverWriter) close() {
	s.mu.Lock()
	s.dead = true
	s.mu.Unlock()
}

func (s *serverWriter) closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dead
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// copyLines passes each line of r on to w, byte for byte, and hands it to
// seen before it goes on, so that what a peer has received is on the tape
// (a client that ends jukebox as soon as it has its answer loses nothing);
// a line seen returns false for does not go on. A line longer than max
// cannot wait: it goes on as it comes and is handed to seen afterwards,
// cut to max bytes (Problem says so); with hold, it is dropped instead.
func copyLines(r io.Reader, w io.Writer, max int, hold bool, seen func(Message) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var held []byte    // the line while it is held: at most max bytes and its ending
	var head []byte    // a streamed line's first max+1 bytes, for the record
	size := 0          // the line's length so far
	streaming := false // over max: its bytes go on as they come
	var prev byte      // the byte before this chunk, for a \r\n split across chunks
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			size += len(chunk)
			if !streaming {
				held = append(held, chunk...)
				if len(held) > max+2 {
					streaming = true
					head = append(head[:0], held[:max+1]...)
					if !hold {
						if _, werr := w.Write(held); werr != nil {
							return werr
						}
					}
					held = held[:0]
				}
			} else if !hold {
				if _, werr := w.Write(chunk); werr != nil {
					return werr
				}
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			prev = chunk[len(chunk)-1]
			continue
		}
		if size > 0 && (err == nil || err == io.EOF) {
			full := size // the line's length without its ending
			if n := len(chunk); n > 0 && chunk[n-1] == '\n' {
				full--
				if n > 1 && chunk[n-2] == '\r' || n == 1 && prev == '\r' {
					full--
				}
			}
			if streaming {
				m := classify(head, full, max)
				if hold {
					m.Problem += "; dropped, not passed on: a policy must read a message whole"
				}
				seen(m)
			} else if seen(classify(held, full, max)) {
				if _, werr := w.Write(held); werr != nil {
					return werr
				}
			}
			held, size, prev, streaming = held[:0], 0, 0, false
		}
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// classify makes the Message of a line of full bytes (its ending left
// out) whose first max+1 bytes (at most) are in line.
func classify(line []byte, full, max int) Message {
	raw := bytes.TrimRight(line, "\r\n")
	m := Message{Raw: raw, Size: full}
	switch {
	case full > max:
		m.Raw = raw[:min(len(raw), max)]
		m.Problem = fmt.Sprintf("a message of %d bytes, over the limit of %d: recorded cut", full, max)
	case len(bytes.TrimSpace(raw)) == 0:
		m.Problem = "an empty line"
	case !json.Valid(raw):
		m.Problem = "not JSON"
	}
	return m
}

// envelope is what matters of a JSON-RPC message here.
type envelope struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
}

func parse(raw []byte) (envelope, bool) {
	var e envelope
	if json.Unmarshal(raw, &e) != nil {
		return e, false
	}
	return e, true
}

// isRequest: a method and an id.
func (e envelope) isRequest() bool { return e.Method != "" && len(e.ID) > 0 && string(e.ID) != "null" }

// isResponse: an id and no method.
func (e envelope) isResponse() bool { return e.Method == "" && len(e.ID) > 0 }

// pending tracks the client's requests the server has not answered. A
// request is counted when it has gone to the server, so its response may
// be seen first: each id holds sent minus answered, and only a positive
// count is waiting.
type pending struct {
	mu  sync.Mutex
	ids map[string]int
	raw map[string]json.RawMessage
}

func newPending() *pending {
	return &pending{ids: map[string]int{}, raw: map[string]json.RawMessage{}}
}

func (p *pending) add(id json.RawMessage, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := string(id)
	p.ids[k] += n
	if p.ids[k] == 0 {
		delete(p.ids, k)
		delete(p.raw, k)
	} else if n > 0 {
		p.raw[k] = append(json.RawMessage(nil), id...)
	}
}

func (p *pending) sent(id json.RawMessage) { p.add(id, 1) }

func (p *pending) answered(m Message) {
	if e, ok := parse(m.Raw); ok && e.isResponse() {
		p.add(e.ID, -1)
	}
}

// drain returns the requests still waiting and forgets them.
func (p *pending) drain() []json.RawMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []json.RawMessage
	for k, n := range p.ids {
		if n > 0 {
			out = append(out, p.raw[k])
			delete(p.ids, k)
			delete(p.raw, k)
		}
	}
	return out
}
