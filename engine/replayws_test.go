package engine

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// wsTape records a WebSocket session: the upgrade (an http.request
// answered 101), then net.conn with the server's two frames, the second
// sent after the agent's 10 bytes.
func wsTape(t *testing.T, first, second string) *tapefmt.Tape {
	t.Helper()
	return wsTapeUp(t, first, second, []byte("0123456789"))
}

// wsTapeUp is wsTape with the agent's recorded bytes up, the second frame
// sent after all of them.
func wsTapeUp(t *testing.T, first, second string, upBytes []byte) *tapefmt.Tape {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ws.jbx")
	down := first + second
	err := tapefmt.CreateWith(path, tapefmt.Options{Sync: tapefmt.SyncNever}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}, Mode: tapefmt.ModeRecord})
		w.Append(0, tapefmt.HTTPRequest{ID: 0, Scheme: "http", Host: "chat.example.test", Method: "GET", Path: "/socket",
			Header: http.Header{"Upgrade": {"websocket"}, "Sec-Websocket-Key": {"recorded-key"}}})
		w.Append(0, tapefmt.HTTPResponse{ID: 0, Status: 101, Header: http.Header{"Upgrade": {"websocket"},
			"Connection": {"Upgrade"}, "Sec-Websocket-Accept": {"recorded-accept"}}})
		up, _ := w.PutBlob("up", upBytes)
		dn, _ := w.PutBlob("down", []byte(down))
		w.Append(0, tapefmt.NetConn{ID: 0, Proto: "websocket", Host: "chat.example.test", Addr: "chat.example.test:80", Request: 0,
			Up: up, UpSize: int64(len(upBytes)), UpChunks: tapefmt.Chunks{{End: int64(len(upBytes)), At: 1000_000}},
			Down: dn, DownSize: int64(len(down)), DownChunks: tapefmt.Chunks{{End: int64(len(first)), At: 500_000}, {End: int64(len(down)), At: 2000_000}}})
		_, err := w.Append(0, tapefmt.RunEnd{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return openTape(t, path)
}

// wsUpgrade replays tp behind a proxy and sends it the agent's WebSocket
// upgrade request: the connection, and a reader at the proxy's answer.
func wsUpgrade(t *testing.T, tp *tapefmt.Tape, onDiv func(*Divergence)) (net.Conn, *bufio.Reader) {
	t.Helper()
	m, err := NewMatcher(tp, reqmatch.Default())
	if err != nil {
		t.Fatal(err)
	}
	p, err := newProxy(&tapeBackend{m: m, tape: tp, forkCall: -1, onDiv: onDiv}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	p.serve()
	conn, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(conn, "GET http://chat.example.test/socket HTTP/1.1\r\nHost: chat.example.test\r\nUpgrade: websocket\r\n"+
		"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
	return conn, bufio.NewReader(conn)
}

// TestReplayWebSocketSession: an upgrade on the tape is answered 101 with
// the accept key of the live request's key; the server's first frame
// comes unasked, the second once the agent has sent its 10 bytes, then
// the connection ends.
func TestReplayWebSocketSession(t *testing.T) {
	tp := wsTape(t, "server-frame-1", "server-frame-2")
	conn, br := wsUpgrade(t, tp, func(*Divergence) {})
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 101 || resp.Header.Get("Sec-WebSocket-Accept") != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("upgrade answered %d %v", resp.StatusCode, resp.Header)
	}
	first := make([]byte, len("server-frame-1"))
	if _, err := io.ReadFull(br, first); err != nil || string(first) != "server-frame-1" {
		t.Fatalf("first frame %q %v", first, err)
	}
	io.WriteString(conn, "abcdefghij")
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "server-frame-2" {
		t.Fatalf("after the agent's bytes: %q %v", rest, err)
	}
}

// eventLog records the order of a session's reads and writes.
type eventLog struct {
	events []string
	up     []byte
}

func (l *eventLog) Read(p []byte) (int, error) {
	if len(l.up) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:1], l.up) // one byte at a time, so each read is seen
	l.up = l.up[n:]
	l.events = append(l.events, "read")
	return n, nil
}

func (l *eventLog) Write(p []byte) (int, error) {
	l.events = append(l.events, "write "+string(p))
	return len(p), nil
}

// TestPlaySessionOrder: a recorded server piece is written only after the
// agent's bytes recorded before it have been read.
func TestPlaySessionOrder(t *testing.T) {
	l := &eventLog{up: []byte("ab")}
	s := &tapefmt.NetConn{UpSize: 2, UpChunks: tapefmt.Chunks{{End: 1, At: 10}, {End: 2, At: 30}},
		DownChunks: tapefmt.Chunks{{End: 1, At: 5}, {End: 2, At: 20}, {End: 3, At: 40}}}
	rw := bufio.NewReadWriter(bufio.NewReaderSize(l, 16), bufio.NewWriter(l))
	if err := playSession(rw, []byte("XYZ"), s, &wsCheck{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"write X", "read", "write Y", "read", "write Z"}
	if len(l.events) != len(want) {
		t.Fatalf("events %q, want %q", l.events, want)
	}
	for i := range want {
		if l.events[i] != want[i] {
			t.Fatalf("events %q, want %q", l.events, want)
		}
	}
}

// wsClientFrame is a text frame as a client sends it, masked with key.
func wsClientFrame(text string, key [4]byte) []byte {
	b := []byte{0x81, 0x80 | byte(len(text)), key[0], key[1], key[2], key[3]}
	for i := range len(text) {
		b = append(b, text[i]^key[i%4])
	}
	return b
}

// TestReplayWebSocketMessagesCompared: the messages an agent sends on a
// replayed WebSocket session are compared with the recorded ones,
// unmasked (a client masks each frame with a key of its own). Seen: the
// agent sent "DELETE ALL PROD DATA!" where it had sent "transfer $10 to
// alice" (as long), and replay --strict said the run replayed identical;
// now that is the replay's divergence, naming the message, and the
// session ends there.
func TestReplayWebSocketMessagesCompared(t *testing.T) {
	recorded := wsClientFrame("transfer $10 to alice", [4]byte{1, 2, 3, 4})
	for _, c := range []struct {
		name, sent string
		diverges   bool
	}{{"same message, another mask", "transfer $10 to alice", false}, {"another message", "DELETE ALL PROD DATA!", true}} {
		t.Run(c.name, func(t *testing.T) {
			tp := wsTapeUp(t, "server-frame-1", "server-frame-2", recorded)
			divs := make(chan *Divergence, 1)
			conn, br := wsUpgrade(t, tp, func(d *Divergence) { divs <- d })
			if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 101 {
				t.Fatalf("upgrade: %v %v", resp, err)
			}
			first := make([]byte, len("server-frame-1"))
			if _, err := io.ReadFull(br, first); err != nil {
				t.Fatal(err)
			}
			conn.Write(wsClientFrame(c.sent, [4]byte{9, 8, 7, 6}))
			rest, _ := io.ReadAll(br)
			select {
			case d := <-divs:
				if !c.diverges {
					t.Fatalf("diverged: %v", d)
				}
				if d.Path != "message 1" || d.Expected != `"transfer $10 to alice"` || d.Actual != `"DELETE ALL PROD DATA!"` || string(rest) != "" {
					t.Errorf("divergence %+v, then %q", d, rest)
				}
			default:
				if c.diverges {
					t.Fatalf("no divergence; the session went on with %q", rest)
				}
				if string(rest) != "server-frame-2" {
					t.Errorf("after the message: %q", rest)
				}
			}
		})
	}
}
