// Package pgbooth brings an agent's SQL into the Shadow Booth: a local
// PostgreSQL endpoint (the wire protocol, through pgx's pgproto3) whose
// client sessions run inside transactions that are PREPAREd and then
// committed or rolled back together with the staged files, under the
// booth's one decision record.
//
// # Sessions
//
// Start checks the server (reachable, max_prepared_transactions above
// zero) and listens on 127.0.0.1 at an ephemeral port. Attach joins the
// endpoint to a booth transaction as one participant. Each client
// connection gets an upstream session of its own, connected with the
// DSN's credentials, in which the proxy has issued BEGIN; when the client
// disconnects, that session keeps the client's work and waits, still
// inside its transaction, for the booth's decision, and a later client
// may take it over (after RESET ALL, DEALLOCATE ALL and CLOSE ALL), so
// that an agent running psql once per statement does not use up the
// server's connections or prepared-transaction slots. At most as many
// sessions are opened as the server had free prepared-transaction slots
// when the run started; a client beyond that is refused (53300).
//
// Clients connected at the same time are separate transactions until the
// booth decides: one does not see what the other wrote, and a lock one
// took (a row it changed, a table it altered) is held until the end, so a
// wait for it by another could never end; the endpoint breaks such a wait
// (see watch.go). Each session runs at the server's default isolation
// level; one a client asks for (BEGIN ISOLATION LEVEL, SET TRANSACTION)
// is not applied.
//
// Inside a session the client sees an ordinary server: autocommit,
// BEGIN/COMMIT/ROLLBACK, errors that undo only their own statement or
// block. The proxy maps them onto savepoints inside the held transaction
// (see relay.go); COMMIT therefore commits to the booth, not to the
// database. PREPARE TRANSACTION, COMMIT PREPARED and ROLLBACK PREPARED
// would take the transaction out of the booth's hands, and LISTEN,
// UNLISTEN, NOTIFY and temporary objects would make it impossible to
// PREPARE; they are refused with an ErrorResponse the client reads like
// any other. What the client did not see complete when it disconnected
// (an open block, a statement in flight) is rolled back, as the server
// would roll back an open transaction.
//
// # Commit
//
// At the booth's commit the endpoint stops accepting connections,
// disconnects any client still connected, and PREPAREs every session under
// "<gid>.<n>", gid being the participant's id in the booth journal (bound
// to the transaction id); COMMIT PREPARED or ROLLBACK PREPARED follows the
// files' decision. After a crash, Resolver finishes every "<gid>.<n>"
// the way the journal says. A session that cannot be prepared (its
// connection was lost, PostgreSQL refuses) fails the whole commit, files
// included.
//
// # What is shown
//
// Work stops the endpoint once the agent has ended and lists, per session,
// the statements whose effect it kept and the tables written (named by the
// statements, or shown by the server's locks), destructive ones marked
// sensitive (work.go, locks.go); the booth asks about it, lists it and
// writes it on the tape with the files (Work.String, Work.Sensitive). A
// crash before the decision ends the sessions, and the server rolls them
// back; the booth transaction then refuses to commit its files alone
// (sandbox.ErrLostWork).
//
// # Access
//
// The endpoint accepts connections from loopback only, and asks for a
// password: a random one made for the run and given to the agent in its
// environment (PGPASSWORD and DATABASE_URL). Trusting loopback is not
// enough: any local user or process could then reach the database with
// the DSN's role, which may hold rights its own login does not. The
// password is asked for in clear text (AuthenticationCleartextPassword):
// it never leaves the machine, and whoever can read loopback traffic can
// read the agent's environment too. The proxy is a transaction boundary,
// not a privilege boundary: the agent acts with the DSN's role, so give
// it one that can do only what the agent should (a role allowed dblink,
// COPY ... PROGRAM or other servers can reach outside the transaction).
package pgbooth

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jukebox-os/jukebox/sandbox"
)

// Kind is the participant kind in the booth journal; Resolver finishes it.
const Kind = "postgres-sessions"

// Timeouts: for reaching the server, and for a client's session to end
// once the booth decides (then its query is cancelled).
var (
	connectTimeout = 10 * time.Second
	settleTimeout  = 10 * time.Second
	cancelWait     = 5 * time.Second
)

// Server is the endpoint of one booth run.
type Server struct {
	cfg      *pgconn.Config
	where    string // host:port/database, for messages
	ln       net.Listener
	password string
	max      int // sessions it may open

	mu       sync.Mutex
	tx       bool // attached: clients are served
	closing  bool
	decided  bool // Prepare or Rollback ran
	ups      []*upstream
	idle     []*upstream
	dialing  int
	changed  chan struct{}     // closed and replaced when a session is released or its client leaves
	stop     chan struct{}     // closed when the endpoint stops
	watching chan struct{}     // closed when watchLocks has returned
	starting map[net.Conn]bool // connections not yet relayed
	cancels  map[uint32]cancelKey
	wg       sync.WaitGroup
}

type cancelKey struct {
	secret []byte
	u      *upstream
}

// StartError is why Start refused the server.
type StartError struct{ msg string }

func (e *StartError) Error() string { return e.msg }

// Start checks the server at dsn and listens on 127.0.0.1. The server
// must be reachable and allow prepared transactions; Start says plainly
// when it does not.
func Start(ctx context.Context, dsn string) (*Server, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, &StartError{fmt.Sprintf("--pg: %v", err)}
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = connectTimeout
	}
	s := &Server{cfg: cfg, where: fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database),
		starting: map[net.Conn]bool{}, cancels: map[uint32]cancelKey{}, changed: make(chan struct{}),
		stop: make(chan struct{})}
	if s.max, err = s.check(ctx); err != nil {
		return nil, err
	}
	var pw [24]byte
	rand.Read(pw[:])
	s.password = base64.RawURLEncoding.EncodeToString(pw[:])
	if s.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("--pg: listen on loopback: %w", err)
	}
	go s.accept()
	s.watching = make(chan struct{})
	go func() {
		defer close(s.watching)
		s.watchLocks(s.stop)
	}()
	return s, nil
}

// check connects once and returns how many prepared transactions are
// free for the run's sessions.
func (s *Server) check(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ConnectTimeout)
	defer cancel()
	pc, err := pgconn.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return 0, &StartError{fmt.Sprintf("--pg: cannot reach PostgreSQL at %s: %v", s.where, err)}
	}
	defer pc.Close(context.Background())
	res := pc.ExecParams(ctx, "SELECT pg_catalog.current_setting('max_prepared_transactions'), "+
		"(SELECT pg_catalog.count(*) FROM pg_catalog.pg_prepared_xacts)", nil, nil, nil, nil).Read()
	if res.Err != nil || len(res.Rows) != 1 {
		return 0, &StartError{fmt.Sprintf("--pg: PostgreSQL at %s: cannot read max_prepared_transactions: %v", s.where, res.Err)}
	}
	max, _ := strconv.Atoi(string(res.Rows[0][0]))
	used, _ := strconv.Atoi(string(res.Rows[0][1]))
	switch {
	case max == 0:
		return 0, &StartError{fmt.Sprintf("--pg: PostgreSQL at %s has max_prepared_transactions = 0 (its default), "+
			"so it cannot prepare the agent's SQL to commit together with the files: set max_prepared_transactions "+
			"(for example to 64) in postgresql.conf and restart the server, or run without --pg", s.where)}
	case used >= max:
		return 0, &StartError{fmt.Sprintf("--pg: all %d prepared transactions PostgreSQL at %s allows "+
			"(max_prepared_transactions) are in use: finish them (pg_prepared_xacts) or raise the limit", max, s.where)}
	}
	return max - used, nil
}

// Where names the server: host:port/database (no credentials).
func (s *Server) Where() string { return s.where }

// Addr is the endpoint's address, 127.0.0.1:PORT.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Env is what the agent needs to connect: DATABASE_URL and the libpq
// variables. A variable with an empty value is one to remove from the
// agent's environment, since it would send libpq elsewhere or make it
// refuse the endpoint's password exchange.
func (s *Server) Env() map[string]string {
	_, port, _ := net.SplitHostPort(s.Addr())
	u := url.URL{Scheme: "postgres", User: url.UserPassword(s.cfg.User, s.password), Host: s.Addr(),
		Path: "/" + s.cfg.Database, RawQuery: "sslmode=disable"}
	env := map[string]string{
		"DATABASE_URL": u.String(), "PGHOST": "127.0.0.1", "PGPORT": port, "PGUSER": s.cfg.User,
		"PGDATABASE": s.cfg.Database, "PGPASSWORD": s.password, "PGSSLMODE": "disable", "PGGSSENCMODE": "disable",
	}
	for _, k := range []string{"PGHOSTADDR", "PGSERVICE", "PGSERVICEFILE", "PGREQUIREAUTH", "PGCHANNELBINDING",
		"PGREQUIRESSL", "PGSSLNEGOTIATION", "PGTARGETSESSIONATTRS", "PGLOADBALANCEHOSTS"} {
		env[k] = ""
	}
	return env
}

// Attach joins the endpoint to tx: from now on clients are served, and
// their work commits or rolls back with tx.
func (s *Server) Attach(tx *sandbox.Tx) error {
	if err := tx.Join(participant{s}); err != nil {
		return err
	}
	s.mu.Lock()
	s.tx = true
	s.mu.Unlock()
	return nil
}

// Resolver finishes this server's sessions after a crash.
func (s *Server) Resolver() sandbox.Resolver { return Resolver{Config: s.cfg} }

// Used reports whether any client opened a session.
func (s *Server) Used() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ups) > 0
}

// Decided reports whether the booth prepared or rolled back the sessions.
func (s *Server) Decided() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.decided
}

// Close stops the endpoint and closes every session. Work the booth did
// not decide on is rolled back by the server when its connection closes;
// prepared work stays prepared for Resolver.
func (s *Server) Close() error {
	s.quiesce()
	s.mu.Lock()
	ups := slices.Clone(s.ups)
	s.mu.Unlock()
	for _, u := range ups {
		u.conn.Close()
	}
	s.wg.Wait()
	return nil
}

func (s *Server) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			c.Close()
			continue
		}
		s.starting[c] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.serve(c)
		}()
	}
}

// fatal sends a FATAL error to a client during startup.
func fatal(w *bufio.Writer, code, msg string) {
	send(w, &pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: msg})
	w.Flush()
}

// serve runs one client connection: startup, password, a session, the relay.
func (s *Server) serve(c net.Conn) {
	defer c.Close()
	started := false
	defer func() {
		if !started {
			s.mu.Lock()
			delete(s.starting, c)
			s.mu.Unlock()
		}
	}()
	if a, ok := c.RemoteAddr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		return
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	r, w := bufio.NewReader(c), bufio.NewWriter(c)
	var sm *pgproto3.StartupMessage
	for sm == nil {
		m, err := readStartup(r)
		if err != nil {
			return
		}
		switch m := m.(type) {
		case *pgproto3.SSLRequest, *pgproto3.GSSEncRequest:
			w.WriteByte('N') // loopback only: no encryption
			w.Flush()
		case *pgproto3.CancelRequest:
			s.cancel(m)
			return
		case *pgproto3.StartupMessage:
			sm = m
		}
	}
	var unknown []string
	for k := range sm.Parameters {
		if strings.HasPrefix(k, "_pq_.") {
			unknown = append(unknown, k)
		}
	}
	if sm.ProtocolVersion != pgproto3.ProtocolVersion30 || len(unknown) > 0 {
		send(w, &pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0, UnrecognizedOptions: unknown})
	}
	if _, ok := sm.Parameters["replication"]; ok {
		fatal(w, "08P01", "jukebox booth: replication connections are not served")
		return
	}
	if db := sm.Parameters["database"]; db != "" && db != s.cfg.Database {
		fatal(w, "3D000", fmt.Sprintf("jukebox booth: this endpoint serves database %q only", s.cfg.Database))
		return
	}
	send(w, &pgproto3.AuthenticationCleartextPassword{})
	w.Flush()
	f, err := readFrame(r)
	if err != nil {
		return
	}
	pw, err := decode(f, &pgproto3.PasswordMessage{})
	if f.typ != 'p' || err != nil || subtle.ConstantTimeCompare([]byte(pw.Password), []byte(s.password)) != 1 {
		fatal(w, "28P01", fmt.Sprintf("password authentication failed for user %q", sm.Parameters["user"]))
		return
	}
	u, reused, err := s.acquire(c)
	if err != nil {
		var se *sessionError
		if errors.As(err, &se) {
			fatal(w, se.code, se.msg)
		} else {
			fatal(w, "08006", "jukebox booth: cannot open a session on the server: "+err.Error())
		}
		return
	}
	started = true
	rerr := s.session(c, r, w, u, reused, sm.Parameters)
	s.release(u, rerr)
}

type sessionError struct{ code, msg string }

func (e *sessionError) Error() string { return e.msg }

// Waits for a session to come free before opening another: one whose
// client has left, and a short grace for a client that is about to.
var (
	leavingWait = 5 * time.Second
	busyGrace   = 20 * time.Millisecond
)

// acquire gives a client a session. It prefers one an earlier client has
// left (and waits for a client that is leaving), so that an agent that
// connects once per statement runs them all in one session, where each
// sees what the one before it did; only a client that connects while
// others are still connected gets a session of its own.
func (s *Server) acquire(c net.Conn) (*upstream, bool, error) {
	s.mu.Lock()
	deadline := time.Now().Add(leavingWait)
	graced := false
	for {
		switch {
		case s.closing:
			s.mu.Unlock()
			return nil, false, &sessionError{"57P01", "jukebox booth: the run has ended"}
		case !s.tx:
			s.mu.Unlock()
			return nil, false, &sessionError{"57P03", "jukebox booth: the booth transaction has not begun"}
		}
		if n := len(s.idle); n > 0 {
			delete(s.starting, c)
			u := s.idle[n-1]
			s.idle = s.idle[:n-1]
			s.take(u, c)
			s.mu.Unlock()
			return u, true, nil
		}
		leaving, busy := false, false
		for _, u := range s.ups {
			leaving = leaving || u.busy && u.leaving
			busy = busy || u.busy
		}
		wait := time.Until(deadline)
		if !leaving {
			if graced || !busy {
				break
			}
			wait, graced = busyGrace, true
		}
		if wait <= 0 {
			break
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-time.After(wait):
		}
		s.mu.Lock()
	}
	delete(s.starting, c)
	if len(s.ups)+s.dialing >= s.max {
		s.mu.Unlock()
		return nil, false, &sessionError{"53300", fmt.Sprintf("jukebox booth: too many connections: the booth holds "+
			"at most %d sessions at once (the server's free max_prepared_transactions)", s.max)}
	}
	s.dialing++
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ConnectTimeout)
	defer cancel()
	u, err := dial(ctx, s.cfg, 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dialing--
	if err == nil && s.closing {
		u.conn.Close()
		err = &sessionError{"57P01", "jukebox booth: the run has ended"}
	}
	if err != nil {
		return nil, false, err
	}
	u.n = len(s.ups)
	s.ups = append(s.ups, u)
	s.take(u, c)
	return u, false, nil
}

func (s *Server) take(u *upstream, c net.Conn) {
	u.busy, u.leaving, u.client, u.done = true, false, c, make(chan struct{})
}

// leaving notes that u's client has said goodbye or disconnected.
func (s *Server) leaving(u *upstream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u.leaving = true
	s.notify()
}

func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// release returns a session after its client: to the idle list, or
// marked broken.
func (s *Server) release(u *upstream, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for pid, k := range s.cancels {
		if k.u == u {
			delete(s.cancels, pid)
		}
	}
	u.busy, u.client = false, nil
	if err != nil && u.broken == nil {
		u.broken = err
		u.conn.Close()
	}
	if u.broken == nil && !s.closing {
		s.idle = append(s.idle, u)
	}
	close(u.done)
	s.notify()
}

// session sets the session up for the client, tells the client it is
// ready, and relays.
func (s *Server) session(c net.Conn, r *bufio.Reader, w *bufio.Writer, u *upstream, reused bool, params map[string]string) error {
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if reused {
		if _, st, err := u.exec(ctx, "RESET ALL; DEALLOCATE ALL; CLOSE ALL; "+noTimeouts); err != nil || st != 'T' {
			fatal(w, "08006", "jukebox booth: cannot reset the session")
			return fmt.Errorf("reset for a new client: %v (status %q)", err, st)
		}
	}
	if sets := clientSettings(params); len(sets) > 0 {
		_, _, err := u.exec(ctx, "SAVEPOINT "+spBase+"; SELECT "+strings.Join(sets, ", "))
		undo := "RELEASE SAVEPOINT " + spBase
		if err != nil {
			undo = "ROLLBACK TO SAVEPOINT " + spBase + "; " + undo
		}
		if _, st, uerr := u.exec(ctx, undo); uerr != nil || st != 'T' {
			fatal(w, "08006", "jukebox booth: cannot set the session up")
			return fmt.Errorf("set up a client: %v (status %q)", uerr, st)
		}
		if err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) {
				send(w, &pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: pe.Code, Message: pe.Message})
				w.Flush()
				return nil
			}
			return err
		}
	}
	var key [4]byte
	rand.Read(key[:])
	pid := s.newCancelKey(u, key[:])
	send(w, &pgproto3.AuthenticationOk{})
	for _, k := range slices.Sorted(maps.Keys(u.params)) {
		send(w, &pgproto3.ParameterStatus{Name: k, Value: u.params[k]})
	}
	send(w, &pgproto3.BackendKeyData{ProcessID: pid, SecretKey: key[:]})
	send(w, &pgproto3.ReadyForQuery{TxStatus: 'I'})
	if err := w.Flush(); err != nil {
		return nil
	}
	c.SetDeadline(time.Time{})
	return newRelay(u, c, r, w, func() { s.leaving(u) }).serve()
}

// clientSettings are the client's startup parameters as set_config
// calls, which read a value the way the startup packet does.
func clientSettings(params map[string]string) []string {
	set := map[string]string{}
	for k, v := range params {
		switch {
		case k == "user", k == "database", k == "replication", strings.HasPrefix(k, "_pq_."):
		case k == "options":
			for k, v := range parseOptions(v) {
				set[k] = v
			}
		default:
			set[k] = v
		}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(set)) {
		out = append(out, fmt.Sprintf("pg_catalog.set_config(%s, %s, false)", literal(k), literal(set[k])))
	}
	return out
}

// parseOptions reads the -c name=value and --name=value switches of the
// options startup parameter (spaces escaped by backslashes).
func parseOptions(s string) map[string]string {
	var words []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case isSpace(c):
			if cur.Len() > 0 {
				words = append(words, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteByte(c)
		}
	}
	if cur.Len() > 0 {
		words = append(words, cur.String())
	}
	out := map[string]string{}
	for i := 0; i < len(words); i++ {
		var kv string
		switch w := words[i]; {
		case w == "-c" && i+1 < len(words):
			i++
			kv = words[i]
		case strings.HasPrefix(w, "-c"):
			kv = w[2:]
		case strings.HasPrefix(w, "--"):
			kv = w[2:]
		}
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			out[strings.ReplaceAll(k, "-", "_")] = v
		}
	}
	return out
}

// newCancelKey makes the process id and secret the client will use to
// cancel its queries.
func (s *Server) newCancelKey(u *upstream, secret []byte) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		var b [4]byte
		rand.Read(b[:])
		pid := binary.BigEndian.Uint32(b[:]) & 0x7fffffff
		if _, taken := s.cancels[pid]; !taken && pid != 0 {
			s.cancels[pid] = cancelKey{secret: secret, u: u}
			return pid
		}
	}
}

// cancel forwards a client's CancelRequest to its session's server.
func (s *Server) cancel(m *pgproto3.CancelRequest) {
	s.mu.Lock()
	k, ok := s.cancels[m.ProcessID]
	s.mu.Unlock()
	if ok && subtle.ConstantTimeCompare(k.secret, m.SecretKey) == 1 {
		k.u.cancel()
	}
}

// quiesce stops the endpoint: no new clients, every client disconnected,
// and each session back at its transaction's top level (a query still
// running after settleTimeout is cancelled; one that still does not end
// breaks its session).
func (s *Server) quiesce() {
	s.mu.Lock()
	if !s.closing {
		close(s.stop)
	}
	s.closing = true
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.starting {
		c.Close()
	}
	var busy []*upstream
	for _, u := range s.ups {
		if u.busy {
			u.client.Close()
			busy = append(busy, u)
		}
	}
	s.idle = nil
	s.mu.Unlock()
	<-s.watching
	for _, u := range busy {
		select {
		case <-u.done:
			continue
		case <-time.After(settleTimeout):
		}
		u.cancel()
		select {
		case <-u.done:
			continue
		case <-time.After(cancelWait):
		}
		s.mu.Lock()
		if u.broken == nil {
			u.broken = errors.New("a query was still running when the run ended, and did not stop when cancelled")
		}
		s.mu.Unlock()
		u.conn.Close()
		<-u.done
	}
}

// sessions stops the endpoint and returns every session, for the decision.
func (s *Server) sessions() []*upstream {
	ups := s.stopped()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.decided = true
	return ups
}

// stopped stops the endpoint and returns every session.
func (s *Server) stopped() []*upstream {
	s.quiesce()
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ups)
}
