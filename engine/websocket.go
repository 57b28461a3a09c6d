package engine

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// maxConnRecord bounds what a net.conn frame keeps of each direction; the
// connection itself is relayed whole.
const maxConnRecord = 64 << 20

// wsRecord is what a WebSocket session carried, for its net.conn frame.
type wsRecord struct {
	host, addr string
	up, down   pipeRecord
	elapsed    int64
}

// pipeRecord is one direction of a relayed connection.
type pipeRecord struct {
	data   []byte
	chunks tapefmt.Chunks
	cut    bool // more than maxConnRecord went by
}

// isUpgrade says whether r asks to switch to the WebSocket protocol.
func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket") &&
		strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade")
}

// respondPlain answers a plain request live: relayed as it arrives, or,
// for a WebSocket upgrade the upstream accepts, tunnelled both ways.
func (l *live) respondPlain(w http.ResponseWriter, x *exchange) answer {
	if !isUpgrade(x.req) {
		return l.respond(w, x)
	}
	up, err := l.upstreamRequest(x.req.Context(), x)
	if err != nil {
		apiError(w, http.StatusBadGateway, "jukebox: "+err.Error())
		return answer{resp: tapefmt.LLMResponse{Status: http.StatusBadGateway, Error: err.Error()}}
	}
	up.Header.Set("Connection", "Upgrade")
	up.Header.Set("Upgrade", x.req.Header.Get("Upgrade"))
	resp, err := l.client.Do(up)
	if err != nil {
		return answer{resp: tapefmt.LLMResponse{Error: errText(err), Latency: int64(time.Since(x.start))}, abort: true, live: true}
	}
	upstream, ok := resp.Body.(io.ReadWriteCloser)
	if resp.StatusCode != http.StatusSwitchingProtocols || !ok {
		defer resp.Body.Close()
		a := relay(w, x, resp)
		a.live = true
		return a
	}
	defer upstream.Close()
	a := answer{resp: tapefmt.LLMResponse{Status: resp.StatusCode, Header: resp.Header.Clone(), Latency: int64(time.Since(x.start))}, live: true}
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		a.resp.Error = "jukebox: the agent's connection cannot be taken over: " + err.Error()
		return a
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "HTTP/1.1 101 Switching Protocols\r\n"); err == nil {
		resp.Header.Write(conn)
		io.WriteString(conn, "\r\n")
	}
	ws := &wsRecord{host: x.host, addr: up.URL.Host}
	pipeBoth(conn, rw.Reader, upstream, x.start, ws)
	ws.elapsed = int64(time.Since(x.start))
	a.ws, a.resp.Elapsed = ws, ws.elapsed
	return a
}

// pipeBoth relays agent to upstream and back until either side ends, then
// closes both, keeping what went each way with its timing.
func pipeBoth(agent net.Conn, agentBuf *bufio.Reader, upstream io.ReadWriteCloser, start time.Time, ws *wsRecord) {
	var wg sync.WaitGroup
	var once sync.Once
	end := func() { once.Do(func() { agent.Close(); upstream.Close() }) }
	wg.Go(func() { defer end(); copyRecord(upstream, agentBuf, start, &ws.up) })
	wg.Go(func() { defer end(); copyRecord(agent, upstream, start, &ws.down) })
	wg.Wait()
}

// copyRecord copies src to dst until either fails, recording into rec.
func copyRecord(dst io.Writer, src io.Reader, start time.Time, rec *pipeRecord) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if len(rec.data)+n <= maxConnRecord {
				rec.data = append(rec.data, buf[:n]...)
				rec.chunks = append(rec.chunks, tapefmt.Chunk{End: int64(len(rec.data)), At: int64(time.Since(start))})
			} else {
				rec.cut = true
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// recordConn writes the net.conn frame of a WebSocket session that the
// http.request request opened.
func (p *proxy) recordConn(request uint64, ws *wsRecord) {
	nc := tapefmt.NetConn{ID: p.netIDs.Add(1) - 1, Proto: "websocket", Host: ws.host, Addr: ws.addr, Request: request,
		UpSize: int64(len(ws.up.data)), UpChunks: ws.up.chunks, DownSize: int64(len(ws.down.data)), DownChunks: ws.down.chunks,
		Elapsed: ws.elapsed}
	var errs []string
	for _, d := range []struct {
		name string
		rec  *pipeRecord
		h    *tapefmt.Hash
	}{{"up", &ws.up, &nc.Up}, {"down", &ws.down, &nc.Down}} {
		if d.rec.cut {
			errs = append(errs, fmt.Sprintf("%s: only the first %d bytes are kept", d.name, maxConnRecord))
		}
		if len(d.rec.data) == 0 {
			continue
		}
		h, err := p.tape.PutBlob("websocket "+ws.host+" "+d.name, d.rec.data)
		if err != nil {
			errs = append(errs, err.Error())
		}
		*d.h = h
	}
	nc.Error = strings.Join(errs, "; ")
	_, err := p.tape.Append(0, nc)
	p.wrote("net.conn websocket "+ws.host, err)
}
