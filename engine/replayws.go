package engine

import (
	"bufio"
	"cmp"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
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
	if err := playSession(rw, down, c.session); err != nil {
		a.resp.Error = "WebSocket session: " + err.Error()
	}
	return a
}

// playSession writes the recorded down bytes piece by piece, reading from
// the agent, before each, the up bytes it had sent by then; at the end it
// waits for the rest of the agent's bytes (or its close).
func playSession(rw *bufio.ReadWriter, down []byte, s *tapefmt.NetConn) error {
	pieces := s.DownChunks
	if len(pieces) == 0 {
		pieces = tapefmt.Chunks{{End: int64(len(down)), At: s.Elapsed}}
	}
	var read, prev int64
	for _, p := range pieces {
		if p.End < prev || p.End > int64(len(down)) {
			return fmt.Errorf("a bad chunk table in net.conn %d", s.ID)
		}
		if err := readUp(rw, &read, upBefore(s.UpChunks, p.At)); err != nil {
			return err
		}
		rw.Write(down[prev:p.End])
		if err := rw.Flush(); err != nil {
			return err
		}
		prev = p.End
	}
	if err := readUp(rw, &read, s.UpSize); err != nil && err != io.EOF {
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

// readUp reads and drops the agent's bytes until *read reaches want.
func readUp(rw *bufio.ReadWriter, read *int64, want int64) error {
	if *read >= want {
		return nil
	}
	n, err := io.CopyN(io.Discard, rw, want-*read)
	*read += n
	return err
}
