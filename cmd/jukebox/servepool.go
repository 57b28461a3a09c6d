package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// poolRequest is the JSON line a connection to serve --socket begins
// with: the run it asks for.
type poolRequest struct {
	Name string   `json:"name"`
	Argv []string `json:"argv"`
}

// poolEnd is the JSON line that ends a connection: how the run ended,
// once its tape is closed.
type poolEnd struct {
	Code  int    `json:"code"`
	Error string `json:"error,omitempty"`
}

// pool serves run after run on c.Socket, one per connection, until --idle
// passes without one or an interrupt: the Python SDK's reused server,
// which spares each track the start of a process. Standard output gets
// one line, {"pid"}, once it listens (nothing when another serve answers
// on the socket already). The socket is made 0600, in the folder the SDK
// keeps for its user.
func (c *ServeCmd) pool(ctx context.Context, env *Env) error {
	if c.Output != "" {
		return withCode(ExitUsage, errors.New("--socket records a tape per run into --tape-dir; -o names a single one"))
	}
	// The limits are read before the socket listens: once a client can
	// connect, the file that gave them may be gone.
	if err := c.keepConfig(); err != nil {
		return err
	}
	l, err := listenPool(c.Socket)
	if errors.Is(err, errPoolServed) {
		return nil
	}
	if err != nil {
		return err
	}
	defer l.Close()
	fmt.Fprintf(env.Stdout, "{\"pid\": %d}\n", os.Getpid())
	ctx, stop := untilSignal(ctx, env)
	defer stop(nil)
	conns := make(chan net.Conn)
	go func() {
		defer close(conns)
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			conns <- conn
		}
	}()
	return c.poolLoop(ctx, conns)
}

// poolLoop runs a run per connection until ctx is done or --idle passes
// with none running; it waits for the runs it started.
func (c *ServeCmd) poolLoop(ctx context.Context, conns <-chan net.Conn) error {
	idle := time.NewTimer(c.Idle)
	finished := make(chan struct{})
	active := 0
	defer func() {
		for ; active > 0; active-- {
			<-finished
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-idle.C:
			if active == 0 {
				return nil
			}
		case conn, ok := <-conns:
			if !ok {
				return nil
			}
			active++
			idle.Stop()
			go func() {
				c.serveConn(ctx, conn)
				finished <- struct{}{}
			}()
		case <-finished:
			if active--; active == 0 {
				idle.Reset(c.Idle)
			}
		}
	}
}

// errPoolServed: another serve answers on the socket already.
var errPoolServed = errors.New("serve: the socket is served already")

// listenPool listens on path, replacing a socket nothing answers on.
func listenPool(path string) (net.Listener, error) {
	if conn, err := net.DialTimeout("unix", path, time.Second); err == nil {
		conn.Close()
		return nil, errPoolServed
	}
	os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("--socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("--socket %s: %w", path, err)
	}
	return l, nil
}

// maxPoolRequest bounds a pool connection's request line, and
// poolRequestWait the wait for it.
const (
	maxPoolRequest  = 1 << 20
	poolRequestWait = 30 * time.Second
)

// serveConn records the run a connection asks for: the ready line, then,
// once the run ended (through the control API, or the connection closed)
// and its tape is closed, a poolEnd line.
func (c *ServeCmd) serveConn(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	// The request line is bounded in size and time: a process of the
	// user's that sent one without end ran serve out of memory (and tore
	// the tape of the run it served), one that sent nothing held the pool.
	r := bufio.NewReaderSize(conn, maxPoolRequest)
	var req poolRequest
	conn.SetReadDeadline(time.Now().Add(poolRequestWait))
	line, err := r.ReadSlice('\n')
	conn.SetReadDeadline(time.Time{})
	if errors.Is(err, bufio.ErrBufferFull) {
		err = fmt.Errorf("over %d KiB", maxPoolRequest>>10)
	}
	if err == nil {
		err = json.Unmarshal(line, &req)
	}
	if err != nil {
		json.NewEncoder(conn).Encode(poolEnd{Code: ExitUsage, Error: fmt.Sprintf("serve --socket: a request is a JSON line {name, argv}: %v", err)})
		return
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func() {
		io.Copy(io.Discard, r)
		stop(errors.New("the served process closed its connection without ending the run"))
	}()
	end := poolEnd{}
	if err := c.serveOne(ctx, req.Name, req.Argv, conn, io.Discard); err != nil {
		end = poolEnd{Code: codeFor(err), Error: inFlagWords(err).Error()}
	}
	json.NewEncoder(conn).Encode(end)
}
