package engine

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// Under --booth --net none the agent's plain TCP (a connection to a name
// the booth's resolver answered, on a port other than 80 and 443) reaches
// jukebox (sandbox.ExecOptions.Carry). Recording, jukebox carries it to
// the real host and port and writes a net.conn frame: the bytes each way
// with their timing; one that opens with HTTP is cut instead (netsniff.go)
// and taped as a net.refused frame. With --hermetic, and always in replay and fork (a
// net.conn is never carried live there: the world is closed), the booth
// refuses it: the agent gets ECONNREFUSED, and a recording writes a
// net.conn frame with refused set. Either way the frame names the host
// the agent asked for.

// maxRefusedTo bounds the destinations a run lists (Result.RefusedTo).
const maxRefusedTo = 10

// netState is what a booth run keeps of the agent's network.
type netState struct {
	conns    sync.WaitGroup // carried connections still open
	mu       sync.Mutex
	to       []string // Result.RefusedTo
	carried  int
	hermetic int
}

// carrier is the sandbox's Carry for this run: nil (refuse) with
// --hermetic or when not recording.
func (s *session) carrier(ctx context.Context) func(sandbox.CarriedConn) {
	if s.o.Booth.Hermetic || s.mode != tapefmt.ModeRecord {
		return nil
	}
	return func(c sandbox.CarriedConn) {
		if ctx.Err() != nil { // the agent has ended
			c.Conn.Close()
			return
		}
		s.net.conns.Add(1)
		defer s.net.conns.Done()
		s.carry(ctx, c)
	}
}

// carry dials c's host and port and copies both ways until both are done
// or ctx ends (the agent has ended), then writes the net.conn frame.
func (s *session) carry(ctx context.Context, c sandbox.CarriedConn) {
	defer c.Conn.Close()
	addr := net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
	f := tapefmt.NetConn{ID: s.proxy.netIDs.Add(1) - 1, Proto: "tcp", Host: c.Host, Addr: addr}
	start := time.Now()
	dial := s.o.Booth.Dial
	if dial == nil {
		// Never to this machine's own addresses: a name the booth's
		// resolver answered (127.0.0.1 asked as a name, the host's own
		// name) reached the host's loopback services (its PostgreSQL)
		// from --net none, whose loopback is the booth's own.
		dial = (&net.Dialer{Timeout: 30 * time.Second, Control: hostLocalGuard(nil)}).DialContext
	}
	up, err := dial(ctx, "tcp", addr)
	if err != nil {
		f.Error, f.Elapsed = err.Error(), int64(time.Since(start))
		s.appendFrame(f)
		return
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { up.Close(); c.Conn.Close() })
	defer stop()
	f.Addr = up.RemoteAddr().String()
	toUp, toAgent := pipeTimed(up, c.Conn, start)
	if toUp.cut {
		s.netRefused(sandbox.NetRefusal{Family: "ipv4", Addr: addr, Errno: "ECONNRESET", Host: c.Host})
		return
	}
	f.Elapsed = int64(time.Since(start))
	f.Up, f.UpSize, f.UpChunks = s.keepStream("tcp "+addr+" up", toUp)
	f.Down, f.DownSize, f.DownChunks = s.keepStream("tcp "+addr+" down", toAgent)
	if err := errors.Join(toUp.err, toAgent.err); err != nil && ctx.Err() == nil {
		f.Error = err.Error()
	}
	s.net.mu.Lock()
	s.net.carried++
	s.net.mu.Unlock()
	s.appendFrame(f)
}

// pipeTimed copies between the agent and up both ways until both are
// done, or the agent's first bytes speak HTTP (then both are closed, the
// host having been sent nothing).
func pipeTimed(up, agent net.Conn, start time.Time) (toUp, toAgent *timedCopy) {
	toUp, toAgent = &timedCopy{check: speaksHTTP}, &timedCopy{}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if toUp.run(up, agent, start); toUp.cut {
			up.Close()
			agent.Close()
		}
	}()
	go func() { defer wg.Done(); toAgent.run(agent, up, start) }()
	wg.Wait()
	return toUp, toAgent
}

// timedCopy is one direction of a carried connection: what passed, its
// timing, and how it failed.
type timedCopy struct {
	body   []byte
	size   int64
	chunks tapefmt.Chunks
	err    error
	// check, when set, sees the first bytes before they are passed on:
	// true cuts the connection there (cut), passing nothing.
	check func([]byte) bool
	cut   bool
}

// run copies src to dst until src ends, keeping the bytes (up to the
// tape's blob limit) and when each piece came, then passes the end on.
func (t *timedCopy) run(dst, src net.Conn, start time.Time) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && t.size == 0 && t.check != nil && t.check(buf[:n]) {
			t.cut = true
			return
		}
		if n > 0 {
			t.size += int64(n)
			if t.size <= tapefmt.MaxBlobSize {
				t.body = append(t.body, buf[:n]...)
				t.chunks = append(t.chunks, tapefmt.Chunk{End: t.size, At: int64(time.Since(start))})
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				t.err = werr
				break
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				t.err = err
			}
			break
		}
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

// keepStream puts a direction's bytes on the tape as a blob; one over
// the blob limit keeps its size only.
func (s *session) keepStream(name string, t *timedCopy) (tapefmt.Hash, int64, tapefmt.Chunks) {
	if s.tape == nil || t.size == 0 || t.size > tapefmt.MaxBlobSize {
		return tapefmt.Hash{}, t.size, t.chunks
	}
	h, err := s.tape.PutBlob(name, t.body)
	if err != nil {
		return tapefmt.Hash{}, t.size, t.chunks
	}
	return h, t.size, t.chunks
}

// netRefused tapes a connection the booth refused: a net.conn with
// refused set for plain TCP --hermetic refused, else a net.refused (each
// kind bounded by MaxNetRefusedFrames), and lists where it went.
func (s *session) netRefused(r sandbox.NetRefusal) {
	dest, why := r.Addr, ""
	switch {
	case r.Host != "" && r.UDP:
		dest, why = net.JoinHostPort(r.Host, portOf(r.Addr)), " (UDP, which the booth does not carry)"
	case r.Host != "":
		dest, why = net.JoinHostPort(r.Host, portOf(r.Addr)), " (directly, not through jukebox's proxy)"
	}
	if r.Hermetic {
		why = " (--hermetic)"
		s.net.mu.Lock()
		s.net.hermetic++
		n := s.net.hermetic
		s.net.mu.Unlock()
		if n <= MaxNetRefusedFrames {
			s.appendFrame(tapefmt.NetConn{ID: s.proxy.netIDs.Add(1) - 1, Proto: "tcp", Host: r.Host, Addr: r.Addr, Refused: true})
		}
	} else if s.refused.Add(1) <= MaxNetRefusedFrames {
		s.appendFrame(tapefmt.NetRefused{Family: r.Family, Addr: r.Addr, Errno: r.Errno, Host: r.Host})
	}
	s.net.mu.Lock()
	defer s.net.mu.Unlock()
	for _, d := range s.net.to {
		if d == dest+why {
			return
		}
	}
	if len(s.net.to) < maxRefusedTo {
		s.net.to = append(s.net.to, dest+why)
	}
}

// portOf is the port of addr, host:port.
func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// netResult fills in what the run's network came to, once the agent has
// ended and every carried connection is taped.
func (s *session) netResult(res *Result) {
	s.net.conns.Wait()
	s.net.mu.Lock()
	defer s.net.mu.Unlock()
	res.NetConns, res.HermeticRefused, res.RefusedTo = s.net.carried, s.net.hermetic, s.net.to
}
