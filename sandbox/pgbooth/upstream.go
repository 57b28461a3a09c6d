package pgbooth

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// upstream is one connection to the real server, inside the transaction
// that BEGIN opened when it was made. The proxy speaks the protocol on it
// directly (pgconn connects and authenticates, then hands the connection
// over), and one reader goroutine keeps its output flowing into q.
type upstream struct {
	n      int // its place among the server's sessions: the gid suffix
	conn   net.Conn
	w      *bufio.Writer
	q      *queue
	pid    uint32
	key    []byte
	cancel func() error // cancels the query running now (cancelBackend)
	params map[string]string
	// lockCancel is set when watchLocks cancels a statement, so that the
	// client reads why.
	lockCancel atomic.Bool

	// Guarded by Server.mu.
	busy     bool          // a client holds it
	leaving  bool          // ... and has left; the relay is settling
	done     chan struct{} // closed when that client's relay ends
	client   net.Conn
	broken   error  // the session's work cannot be prepared
	prepared string // the gid it was prepared under
	ended    bool   // committed, rolled back or closed

	// Written by the relay serving it (work.go), read once it is stopped.
	kept []tapefmt.SQLStatement // statements whose effect it holds
}

// noTimeouts keeps the server from ending the held transaction while the
// agent runs (a site default for idle_in_transaction_session_timeout or
// transaction_timeout would otherwise end it and lose its work).
const noTimeouts = "SELECT pg_catalog.set_config(name, '0', false) FROM pg_catalog.pg_settings " +
	"WHERE name IN ('idle_in_transaction_session_timeout', 'transaction_timeout')"

// dial connects a new session and opens its transaction.
func dial(ctx context.Context, cfg *pgconn.Config, n int) (*upstream, error) {
	pc, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// The server's own pid for the session: the one its BackendKeyData
	// gave, unless a pooler in between gave one of its own.
	pidQuery := "SELECT pg_catalog.pg_backend_pid()"
	var backend []byte
	for _, sql := range []string{noTimeouts, pidQuery, "BEGIN"} {
		res, err := pc.Exec(ctx, sql).ReadAll()
		if err != nil {
			pc.Close(ctx)
			return nil, err
		}
		if sql == pidQuery && len(res) == 1 && len(res[0].Rows) == 1 && len(res[0].Rows[0]) == 1 {
			backend = res[0].Rows[0][0]
		}
	}
	if err := pc.SyncConn(ctx); err != nil {
		pc.Close(ctx)
		return nil, err
	}
	hc, err := pc.Hijack()
	if err != nil {
		return nil, err
	}
	if hc.Frontend.ReadBufferLen() != 0 {
		hc.Conn.Close()
		return nil, fmt.Errorf("unexpected data from the server after BEGIN")
	}
	u := &upstream{n: n, conn: hc.Conn, w: bufio.NewWriter(hc.Conn), q: newQueue(),
		pid: hc.PID, key: hc.SecretKey, params: maps.Clone(hc.ParameterStatuses)}
	u.cancel = func() error { return sendCancel(cfg, hc.Conn.RemoteAddr(), hc.PID, hc.SecretKey) }
	if string(backend) == strconv.FormatUint(uint64(hc.PID), 10) {
		request := u.cancel
		u.cancel = func() error { return cancelBackend(cfg, hc.PID, request) }
	}
	go pump(bufio.NewReader(hc.Conn), u.q)
	return u, nil
}

// cancelBackend cancels the query session pid is running with
// pg_cancel_backend, over a connection of its own: the server signals
// the backend once. A CancelRequest has the postmaster signal the backend
// and then its process group; the backend takes the two signals one
// after the other, and when the second comes after the cancelled query
// has ended (under load), it stops the session's next statement: the
// booth's own savepoint work, or the agent's next statement. pid is the
// server's own (dial checks it: behind a pooler the BackendKeyData's pid
// is the pooler's, and could name another's session on the server). When
// no connection can be made (the server at its connection limit, which a
// CancelRequest does not count against), or the function refuses,
// fallback sends the CancelRequest.
func cancelBackend(cfg *pgconn.Config, pid uint32, fallback func() error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pc, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return fallback()
	}
	defer pc.Close(context.Background())
	res := pc.ExecParams(ctx, "SELECT pg_catalog.pg_cancel_backend($1)", [][]byte{[]byte(strconv.FormatUint(uint64(pid), 10))}, nil, nil, nil).Read()
	if res.Err != nil || len(res.Rows) != 1 || string(res.Rows[0][0]) != "t" {
		return fallback()
	}
	return nil
}

// sendCancel asks the server to cancel the query a session is running.
func sendCancel(cfg *pgconn.Config, addr net.Addr, pid uint32, key []byte) error {
	network, address := addr.Network(), addr.String()
	if network == "unix" {
		network, address = pgconn.NetworkAddress(cfg.Host, cfg.Port)
	}
	c, err := net.DialTimeout(network, address, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	b, err := (&pgproto3.CancelRequest{ProcessID: pid, SecretKey: key}).Encode(nil)
	if err != nil {
		return err
	}
	_, err = c.Write(b)
	return err
}

// wait blocks until q may have something new, or ctx ends.
func (u *upstream) wait(ctx context.Context) error {
	select {
	case <-u.q.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// exec runs sql as a simple Query when no client is on the session and
// returns the last command tag and the transaction status. A server error
// is a *pgconn.PgError.
func (u *upstream) exec(ctx context.Context, sql string) (tag string, status byte, err error) {
	send(u.w, &pgproto3.Query{String: sql})
	if err := u.w.Flush(); err != nil {
		return "", 0, err
	}
	var serr error
	for {
		f, ok, rerr := u.q.pop()
		if !ok {
			if rerr != nil {
				return "", 0, rerr
			}
			if err := u.wait(ctx); err != nil {
				return "", 0, err
			}
			continue
		}
		switch f.typ {
		case 'C':
			if m, err := decode(f, &pgproto3.CommandComplete{}); err == nil {
				tag = string(m.CommandTag)
			}
		case 'E':
			if m, err := decode(f, &pgproto3.ErrorResponse{}); err == nil && serr == nil {
				serr = pgconn.ErrorResponseToPgError(m)
			}
		case 'S':
			u.noteParam(f)
		case 'Z':
			if len(f.body) > 0 {
				status = f.body[0]
			}
			return tag, status, serr
		}
	}
}

// noteParam records a ParameterStatus message.
func (u *upstream) noteParam(f frame) {
	if m, err := decode(f, &pgproto3.ParameterStatus{}); err == nil {
		u.params[m.Name] = m.Value
	}
}

// scs reports standard_conforming_strings, which decides how a
// backslash in '...' reads.
func (u *upstream) scs() bool { return u.params["standard_conforming_strings"] != "off" }

// literal is s as a SQL string constant, whatever
// standard_conforming_strings says.
func literal(s string) string {
	return "E'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}
