package engine

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// linkSessions gives each recorded WebSocket session (net.conn, proto
// websocket) to the call that upgraded to it: the http.request of its
// request id answered 101, else the model call of that number.
func linkSessions(sessions []*tapefmt.NetConn, plain, model map[uint64]*Call) {
	for _, s := range sessions {
		if s.Proto != "websocket" {
			continue
		}
		for _, c := range []*Call{plain[s.Request], model[s.Request]} {
			if c != nil && c.Response != nil && c.Response.Status == http.StatusSwitchingProtocols && c.session == nil {
				c.session = s
				break
			}
		}
	}
}

// wsGUID is RFC 6455's key suffix.
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// wsAccept is the Sec-WebSocket-Accept answering key.
func wsAccept(key string) string {
	sum := sha1.Sum([]byte(key + wsGUID))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// serveSession answers a recorded WebSocket upgrade: the 101 with the
// recorded headers (its accept key made for the live request's key), then
// the server's recorded bytes in order, each piece once the agent has
// sent as many bytes as it had when the piece came (its frames are
// masked afresh, so their count is what can be compared), then the end.
func (t *tapeBackend) serveSession(w http.ResponseWriter, x *exchange, c *Call) answer {
	a := answer{resp: *c.Response}
	down, err := blobOf(t.tape, c.session.Down)
	if err != nil {
		a.resp.Error = err.Error()
		return a
	}
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		a.resp.Error = "jukebox replay: the connection cannot be taken over for the WebSocket session: " + err.Error()
		apiError(w, http.StatusInternalServerError, a.resp.Error)
		return a
	}
	defer conn.Close()
	head := c.Response.Header.Clone()
	// The recorder keeps no hop-by-hop headers; the agent's client needs
	// these two to take the 101 for an upgrade.
	head.Set("Connection", "Upgrade")
	head.Set("Upgrade", cmp.Or(x.req.Header.Get("Upgrade"), "websocket"))
	if key := x.req.Header.Get("Sec-WebSocket-Key"); key != "" {
		head.Set("Sec-WebSocket-Accept", wsAccept(key))
	}
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\n")
	head.Write(rw)
	rw.WriteString("\r\n")
	if err := rw.Flush(); err != nil { // the agent speaks first only once it has the 101
		a.resp.Error = "WebSocket session: " + err.Error()
		return a
	}
	conn.SetReadDeadline(time.Now().Add(maxReplayWait))
	up, err := blobOf(t.tape, c.session.Up)
	if err != nil {
		a.resp.Error = "WebSocket session: the agent's recorded messages do not read: " + err.Error()
		return a
	}
	check := &wsCheck{recorded: wsMessages(up)}
	if err := playSession(rw, down, c.session, check); err != nil {
		a.resp.Error = "WebSocket session: " + err.Error()
		var d *wsDivergence
		if errors.As(err, &d) {
			t.plainDiverged(&Divergence{Endpoint: "WebSocket " + x.req.Method + " " + x.scheme + "://" + x.host + x.path,
				Frame: int64(c.Seq), Path: fmt.Sprintf("message %d", d.n), Expected: d.expected, Actual: d.actual,
				Diff: "the agent sent another message on the WebSocket session than the recorded one"})
		}
	}
	return a
}

// wsFrame is one frame a WebSocket client sent: its first byte (FIN,
// RSV, opcode) and its payload unmasked.
type wsFrame struct {
	head    byte
	payload []byte
}

// wsMessages parses the client's frames in b (RFC 6455 5.2, masked or
// not) and keeps the data frames (text, binary, continuation): control
// frames (ping, pong, close) come when a library's timers say, and a
// client masks each frame with a key of its own, so the messages
// unmasked are what a replay compares. A frame cut at the end of b is
// left for more bytes (rest).
func wsMessages(b []byte) []wsFrame {
	fs, _ := wsParse(b)
	return fs
}

func wsParse(b []byte) (frames []wsFrame, rest []byte) {
	for {
		if len(b) < 2 {
			return frames, b
		}
		n, off := uint64(b[1]&0x7f), 2
		switch n {
		case 126:
			if len(b) < 4 {
				return frames, b
			}
			n, off = uint64(binary.BigEndian.Uint16(b[2:])), 4
		case 127:
			if len(b) < 10 {
				return frames, b
			}
			n, off = binary.BigEndian.Uint64(b[2:]), 10
		}
		var key []byte
		if b[1]&0x80 != 0 {
			if len(b) < off+4 {
				return frames, b
			}
			key, off = b[off:off+4], off+4
		}
		if n > uint64(len(b)-off) {
			return frames, b
		}
		payload := bytes.Clone(b[off : off+int(n)])
		for i := range payload {
			if key != nil {
				payload[i] ^= key[i%4]
			}
		}
		if op := b[0] & 0x0f; op <= 2 {
			frames = append(frames, wsFrame{head: b[0], payload: payload})
		}
		b = b[off+int(n):]
	}
}

// wsCheck compares the messages the agent sends on a replayed session
// with the recorded ones, in order.
type wsCheck struct {
	recorded []wsFrame
	live     []byte // bytes of a frame not yet whole
	n        int    // messages compared
}

// wsDivergence is the first message that differs.
type wsDivergence struct {
	n                int // 1-based
	expected, actual string
}

func (d *wsDivergence) Error() string {
	return fmt.Sprintf("message %d differs from the recording: sent %s, recorded %s", d.n, d.actual, d.expected)
}

// take compares the whole frames among the agent's bytes b.
func (c *wsCheck) take(b []byte) error {
	frames, rest := wsParse(append(c.live, b...))
	c.live = bytes.Clone(rest)
	for _, f := range frames {
		c.n++
		if c.n > len(c.recorded) {
			return &wsDivergence{n: c.n, expected: "(none: the recording ends before it)", actual: wsShow(f)}
		}
		if want := c.recorded[c.n-1]; want.head != f.head || !bytes.Equal(want.payload, f.payload) {
			return &wsDivergence{n: c.n, expected: wsShow(want), actual: wsShow(f)}
		}
	}
	return nil
}

// wsShow shows a message for a divergence: text quoted, binary as its
// size, either cut at 200 bytes.
func wsShow(f wsFrame) string {
	p, more := f.payload, ""
	if len(p) > 200 {
		p, more = p[:200], fmt.Sprintf("... (%d bytes)", len(f.payload))
	}
	if f.head&0x0f == 2 {
		return fmt.Sprintf("binary %x%s", p, more)
	}
	return strconv.Quote(string(p)) + more
}

// playSession writes the recorded down bytes piece by piece, reading from
// the agent, before each, the up bytes it had sent by then; at the end it
// waits for the rest of the agent's bytes (or its close).
func playSession(rw *bufio.ReadWriter, down []byte, s *tapefmt.NetConn, check *wsCheck) error {
	pieces := s.DownChunks
	if len(pieces) == 0 {
		pieces = tapefmt.Chunks{{End: int64(len(down)), At: s.Elapsed}}
	}
	var read, prev int64
	for _, p := range pieces {
		if p.End < prev || p.End > int64(len(down)) {
			return fmt.Errorf("a bad chunk table in net.conn %d", s.ID)
		}
		if err := readUp(rw, &read, upBefore(s.UpChunks, p.At), check); err != nil {
			return err
		}
		rw.Write(down[prev:p.End])
		if err := rw.Flush(); err != nil {
			return err
		}
		prev = p.End
	}
	if err := readUp(rw, &read, s.UpSize, check); err != nil && err != io.EOF {
		return err
	}
	return nil
}

// upBefore is how many bytes the agent had sent at time at.
func upBefore(up tapefmt.Chunks, at int64) int64 {
	var n int64
	for _, c := range up {
		if c.At > at {
			break
		}
		n = c.End
	}
	return n
}

// readUp reads the agent's bytes until *read reaches want, comparing its
// messages with the recorded ones (check).
func readUp(rw *bufio.ReadWriter, read *int64, want int64, check *wsCheck) error {
	if *read >= want {
		return nil
	}
	var got bytes.Buffer
	n, err := io.CopyN(&got, rw, want-*read)
	*read += n
	if derr := check.take(got.Bytes()); derr != nil {
		return derr
	}
	return err
}
