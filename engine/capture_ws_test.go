package engine_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// wsClient opens a WebSocket to wss://ws.example/echo through Node's
// https module (the preload sends it through jukebox), sends "one", then
// "two" once "one" is echoed, and closes after "two".
const wsClient = `const https = require('https'), crypto = require('crypto');
const req = https.request({ host: 'ws.example', path: '/echo', headers: { Connection: 'Upgrade', Upgrade: 'websocket',
  'Sec-WebSocket-Key': crypto.randomBytes(16).toString('base64'), 'Sec-WebSocket-Version': '13' } });
req.on('response', (r) => { console.log('no upgrade: ' + r.statusCode); process.exit(1); });
req.on('upgrade', (res, socket, head) => {
  const send = (op, text) => {
    const p = Buffer.from(text), mask = crypto.randomBytes(4);
    socket.write(Buffer.concat([Buffer.from([0x80 | op, 0x80 | p.length]), mask, Buffer.from(p.map((b, i) => b ^ mask[i % 4]))]));
  };
  let buf = head;
  socket.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 2 && buf.length >= 2 + (buf[1] & 0x7f)) {
      const op = buf[0] & 0xf, text = buf.subarray(2, 2 + (buf[1] & 0x7f)).toString();
      buf = buf.subarray(2 + (buf[1] & 0x7f));
      if (op === 8) { socket.end(); return; }
      console.log('echo: ' + text);
      if (text === 'one') send(1, 'two'); else send(8, '');
    }
  });
  send(1, 'one');
});
req.end();`

// TestCaptureWebSocket: a WebSocket session is tunnelled both ways and
// recorded: the upgrade as http frames (status 101) and the session as a
// net.conn frame holding both directions' bytes with their timing; it
// replays from the tape with the server gone (the replayed 101 once hung:
// it was never flushed before the agent's first frame was awaited).
func TestCaptureWebSocket(t *testing.T) {
	t.Parallel()
	testenv.RequireNode(t)
	tool := startTool(t)
	_, tape, out := captureRecord(t, []string{"node", "-e", wsClient}, nil, map[string]string{"ws.example": tool.URL})
	if out != "echo: one\necho: two\n" {
		t.Fatalf("the agent printed %q", out)
	}
	calls, conns := httpCalls(t, tape)
	if len(calls) != 1 || calls[0].resp == nil || calls[0].resp.Status != http.StatusSwitchingProtocols || calls[0].req.Host != "ws.example" {
		t.Fatalf("the upgrade is not on the tape: %+v", calls)
	}
	if len(conns) != 1 || conns[0].Proto != "websocket" || conns[0].Request != calls[0].req.ID || conns[0].Host != "ws.example" {
		t.Fatalf("net.conn frames: %+v", conns)
	}
	c := conns[0]
	if c.UpSize < 2*(6+3) || c.DownSize < 2*(2+3) || len(c.UpChunks) < 2 || len(c.DownChunks) < 2 {
		t.Errorf("the session's bytes are not all on the tape: %+v", c)
	}
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	if down, err := tp.Blob(c.Down); err != nil || !bytes.Contains(down, []byte("one")) || !bytes.Contains(down, []byte("two")) {
		t.Errorf("the server's frames are not in net.conn's down blob (%v): %q", err, down)
	}
	// Replayed with the server gone: the session plays back from net.conn.
	tool.Close()
	var again bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := engine.Replay(ctx, engine.ReplayOptions{From: tape, RunOptions: engine.RunOptions{
		Argv: []string{"node", "-e", wsClient}, Dir: t.TempDir(), Env: cleanEnv(), Stdout: &again, Stderr: io.Discard,
		Routes: map[string]string{"ws.example": tool.URL}}})
	if err != nil || res.Divergence != nil || res.End.ExitCode != 0 || again.String() != out {
		t.Fatalf("replay: %v, divergence %v, exit %d, printed %q", err, res.Divergence, res.End.ExitCode, again.String())
	}
}

// wsEcho is a WebSocket echo server (RFC 6455) for frames of up to 125
// bytes: text frames come back unmasked; a close is answered and ends it.
func wsEcho(w http.ResponseWriter, r *http.Request) {
	sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
		base64.StdEncoding.EncodeToString(sum[:]))
	rw.Flush()
	for {
		var h [6]byte
		if _, err := io.ReadFull(rw, h[:]); err != nil {
			return
		}
		n := int(h[1] & 0x7f)
		p := make([]byte, n)
		if _, err := io.ReadFull(rw, p); err != nil {
			return
		}
		for i := range p {
			p[i] ^= h[2+i%4]
		}
		rw.Write(append([]byte{h[0], byte(n)}, p...))
		rw.Flush()
		if h[0]&0xf == 8 {
			return
		}
	}
}
