package pgbooth

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// How a client session maps onto the held transaction
//
// The upstream session is inside one transaction from BEGIN to the
// booth's PREPARE. The client believes it talks to an ordinary server:
// in autocommit mode, or in transaction blocks it opens and ends itself.
// The relay keeps that illusion with savepoints:
//
//   - Each exchange (the messages up to a Sync, or one simple Query) that
//     starts outside a client block starts with SAVEPOINT jukebox_base;
//     SAVEPOINT jukebox_s. If it fails, ROLLBACK TO SAVEPOINT jukebox_s
//     undoes it, as the server would undo an implicit transaction; either
//     way RELEASE SAVEPOINT jukebox_base folds what is left into the held
//     transaction. (Both are sent lazily, ahead of the next exchange.)
//   - BEGIN and START TRANSACTION (whatever isolation level or access
//     mode they ask for, as SET TRANSACTION: the held transaction's stays)
//     become a statement that does nothing
//     (the savepoint already marks where the block began: statements
//     before BEGIN in the same exchange belong to the block, as on the
//     server); COMMIT and END become SAVEPOINT jukebox_s, a new point to
//     roll back to; ROLLBACK and ABORT become ROLLBACK TO SAVEPOINT
//     jukebox_s. The client sees the tags and transaction status it
//     expects (BEGIN, COMMIT, ROLLBACK; I, T, E).
//   - The client's own SAVEPOINT, RELEASE and ROLLBACK TO pass through:
//     they nest inside the booth's. Names starting with jukebox_ are
//     refused.
//   - PREPARE TRANSACTION, COMMIT PREPARED, ROLLBACK PREPARED, LISTEN,
//     UNLISTEN, NOTIFY and CREATE TEMP ... are refused: the statement is
//     replaced by one that raises the error, so the client reads an
//     ordinary ErrorResponse at the place the statement had.
//
// A simple Query is sent as one Parse/Bind/Describe/Execute per statement
// (and a Sync), so that the server itself checks that each piece the
// relay classified is exactly one statement.

const (
	spBase = "jukebox_base"
	spS    = "jukebox_s"
	// noop stands for BEGIN: it succeeds, returns no rows and changes
	// nothing that outlives the held transaction.
	noop = "SET LOCAL jukebox.begin = ''"
)

// refuseSQL is a statement that fails with msg.
func refuseSQL(msg string) string {
	return "DO $jukebox$BEGIN RAISE EXCEPTION USING ERRCODE = '0A000', MESSAGE = " +
		"'" + strings.ReplaceAll(msg, "'", "''") + "'; END$jukebox$"
}

type itemKind uint8

const (
	itInternal itemKind = iota // the relay's own query: swallowed up to its ReadyForQuery
	itParse
	itBind
	itDescS
	itDescP
	itExec
	itClose
	itSync
	itFcall
)

// item is a message sent upstream whose answer is still to come.
type item struct {
	kind   itemKind
	simple bool      // part of a simple Query sent as extended messages
	info   *stmtInfo // itExec: what the statement is
	offset int32     // simple: where the statement starts in the query, in characters
	empty  bool      // itSync of an empty simple Query
	err    *pgconn.PgError
	// again is internal work that runs again when a late cancel stops it
	// (settle); tries counts the runs after the first.
	again string
	tries int
}

type txState struct {
	block  bool // the client is in a transaction block it opened
	failed bool // ... and a statement in it failed
}

// Pending work on the booth's own savepoints, done ahead of the next
// exchange (or when the client leaves).
const (
	dirtyNone = iota
	dirtyRelease
	dirtyRollback
)

// simpleRun is a simple Query being sent statement by statement.
type simpleRun struct {
	q      string
	pieces []piece
	next   int
	paused bool // a COPY was sent: the rest waits until it completes
	synced bool
}

// relay carries one client connection over one upstream session.
type relay struct {
	u     *upstream
	c     net.Conn
	cw    *bufio.Writer // nil once the client is gone
	cch   chan frame
	quit  chan struct{}
	st    txState
	pred  txState // st as it will be once what was sent so far has run
	dirty int

	pending  []*item
	inCycle  bool // an exchange has started and its ReadyForQuery not yet come
	await    bool // a Sync, Query or FunctionCall was sent: wait for ReadyForQuery
	copyIn   bool
	needSync bool // an extended COPY swallowed the client's Sync: it sends another
	run      *simpleRun
	stmts    map[string]*stmtInfo
	portals  map[string]*stmtInfo

	gone      bool                   // the client left
	abandoned bool                   // ... in the middle of an exchange
	pend      []tapefmt.SQLStatement // completed, not yet kept (work.go)
	fatal     error
}

// newRelay starts reading the client. leaving is called as soon as the
// client says goodbye or disconnects, before the relay has settled.
func newRelay(u *upstream, c net.Conn, r *bufio.Reader, w *bufio.Writer, leaving func()) *relay {
	rl := &relay{u: u, c: c, cw: w, cch: make(chan frame, 64), quit: make(chan struct{}),
		stmts: map[string]*stmtInfo{}, portals: map[string]*stmtInfo{}}
	go func() {
		defer close(rl.cch)
		for {
			f, err := readFrame(r)
			if err != nil || f.typ == 'X' {
				leaving()
				return
			}
			select {
			case rl.cch <- f:
			case <-rl.quit:
				return
			}
		}
	}()
	return rl
}

// serve relays until the client leaves and the session is settled again.
// It returns nil when the session can serve another client, else why not.
func (r *relay) serve() error {
	defer close(r.quit)
	defer r.c.Close()
	for r.fatal == nil {
		if f, ok, err := r.u.q.pop(); ok {
			r.fromServer(f)
			continue
		} else if err != nil {
			r.broke(fmt.Errorf("connection to the server lost: %w", err))
			break
		}
		r.flush()
		if r.gone && len(r.pending) == 0 {
			return r.settle()
		}
		var cch <-chan frame
		if !r.gone && (!r.await || r.copyIn || r.needSync) {
			cch = r.cch
		}
		select {
		case <-r.u.q.ready:
		case f, ok := <-cch:
			if !ok {
				r.leave()
				continue
			}
			r.fromClient(f)
		}
	}
	return r.fatal
}

// flush sends what is buffered for the client, then for the server: a
// client found gone here makes leave queue what the server must be sent
// to end the exchange (CopyFail, Sync), which must go out now, as the
// loop then waits on the server alone.
func (r *relay) flush() {
	if r.cw != nil {
		if err := r.cw.Flush(); err != nil {
			r.leave()
		}
	}
	if err := r.u.w.Flush(); err != nil {
		r.broke(fmt.Errorf("write to the server: %w", err))
	}
}

// broke ends the session: its transaction can no longer be trusted to
// hold exactly what the client was told, so the booth's commit will fail.
func (r *relay) broke(err error) {
	if r.fatal != nil {
		return
	}
	r.fatal = err
	if r.cw != nil {
		send(r.cw, &pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "XX000",
			Message: "jukebox booth: " + err.Error()})
		r.cw.Flush()
		r.cw = nil
	}
	r.u.conn.Close()
}

// toClient writes f to the client, unless it left.
func (r *relay) toClient(f frame) {
	if r.cw != nil {
		writeFrame(r.cw, f)
	}
}

func (r *relay) sendClient(m pgproto3.BackendMessage) {
	if r.cw != nil {
		send(r.cw, m)
	}
}

func (r *relay) push(it *item) { r.pending = append(r.pending, it) }

// internal sends the relay's own statements.
func (r *relay) internal(sql ...string) {
	send(r.u.w, &pgproto3.Query{String: strings.Join(sql, "; ")})
	r.push(&item{kind: itInternal})
}

// internalAgain sends the relay's own sql, which runs again if a late
// cancel stops it: sql must leave the same state whether it ran in part,
// in full or not at all (a rollback to the booth's savepoint does).
func (r *relay) internalAgain(sql string) {
	send(r.u.w, &pgproto3.Query{String: firstRun(sql)})
	r.push(&item{kind: itInternal, again: sql})
}

// firstRun is the first run of internalAgain's sql: sql itself, but for
// a test that makes it slow, to cancel it as it runs.
var firstRun = func(sql string) string { return sql }

// startCycle begins an exchange: pending savepoint work, then the
// savepoints that let it fail alone.
func (r *relay) startCycle() {
	r.inCycle = true
	var sql []string
	switch r.dirty {
	case dirtyRelease:
		sql = append(sql, "RELEASE SAVEPOINT "+spBase)
	case dirtyRollback:
		sql = append(sql, "ROLLBACK TO SAVEPOINT "+spS, "RELEASE SAVEPOINT "+spBase)
	}
	r.dirty = dirtyNone
	if !r.st.block {
		sql = append(sql, "SAVEPOINT "+spBase, "SAVEPOINT "+spS)
	}
	if len(sql) > 0 {
		r.internal(sql...)
	}
	r.pred = r.st
}

// rewrite returns what to send for a statement the client sent, and
// notes its effect on pred.
func (r *relay) rewrite(info *stmtInfo, text string) string {
	switch info.kind {
	case kBegin, kTxMode:
		return noop
	case kCommit:
		if r.pred.block && r.pred.failed {
			r.pred.failed = false
			return "ROLLBACK TO SAVEPOINT " + spS // COMMIT of a failed block rolls it back
		}
		return "SAVEPOINT " + spS
	case kRollback:
		r.pred.failed = false
		return "ROLLBACK TO SAVEPOINT " + spS
	case kSavepoint:
		if strings.HasPrefix(strings.ToLower(info.name), "jukebox_") {
			info.kind, info.why = kRefuse, whyOwnSavepoint
			return refuseSQL(info.why)
		}
		if info.verb == "ROLLBACK TO SAVEPOINT" {
			r.pred.failed = false
		}
	case kRefuse:
		return refuseSQL(info.why)
	}
	return text
}

// complete applies a finished statement's effect and returns the command
// tag the client is to see.
func (r *relay) complete(info *stmtInfo, tag string) string {
	if info == nil {
		return tag
	}
	switch info.kind {
	case kBegin:
		r.st.block = true
		return "BEGIN"
	case kCommit:
		r.st.block, r.st.failed = info.chain, false
		if tag == "ROLLBACK" {
			return "ROLLBACK"
		}
		return "COMMIT"
	case kRollback:
		r.st.block, r.st.failed = info.chain, false
		return "ROLLBACK"
	case kSavepoint:
		if info.verb == "ROLLBACK TO SAVEPOINT" {
			r.st.failed = false
		}
	}
	return tag
}

var trace func(string, ...any)

func (r *relay) fromClient(f frame) {
	if trace != nil {
		trace("C %c %d await=%v copy=%v pending=%d", f.typ, len(f.body), r.await, r.copyIn, len(r.pending))
	}
	w := r.u.w
	switch f.typ {
	case 'X':
		r.leave()
		return
	case 'd', 'c', 'f':
		if r.copyIn {
			writeFrame(w, f)
			r.copyIn = f.typ == 'd'
			if !r.copyIn && r.run != nil {
				send(w, &pgproto3.Flush{})
			}
		}
		// Outside COPY the server drops these; so does the relay.
		return
	case 'S':
		if r.needSync {
			writeFrame(w, f) // the Sync the server waits for after an extended COPY
			r.needSync = false
			return
		}
	}
	if !r.inCycle {
		r.startCycle()
	}
	switch f.typ {
	case 'Q':
		r.query(f)
	case 'P':
		m, err := decode(f, &pgproto3.Parse{})
		if err != nil {
			r.protocol(err)
			return
		}
		info := classify(m.Query, r.u.scs())
		info.text = m.Query
		if text := r.rewrite(&info, m.Query); text != m.Query {
			m.Query = text
			send(w, m)
		} else {
			writeFrame(w, f)
		}
		r.stmts[m.Name] = &info
		r.push(&item{kind: itParse})
	case 'B':
		m, err := decode(f, &pgproto3.Bind{})
		if err != nil {
			r.protocol(err)
			return
		}
		r.portals[m.DestinationPortal] = r.stmts[m.PreparedStatement]
		writeFrame(w, f)
		r.push(&item{kind: itBind})
	case 'D':
		m, err := decode(f, &pgproto3.Describe{})
		if err != nil {
			r.protocol(err)
			return
		}
		writeFrame(w, f)
		if m.ObjectType == 'S' {
			r.push(&item{kind: itDescS})
		} else {
			r.push(&item{kind: itDescP})
		}
	case 'E':
		m, err := decode(f, &pgproto3.Execute{})
		if err != nil {
			r.protocol(err)
			return
		}
		writeFrame(w, f)
		r.push(&item{kind: itExec, info: r.portals[m.Portal]})
	case 'C':
		m, err := decode(f, &pgproto3.Close{})
		if err != nil {
			r.protocol(err)
			return
		}
		if m.ObjectType == 'S' {
			delete(r.stmts, m.Name)
		} else {
			delete(r.portals, m.Name)
		}
		writeFrame(w, f)
		r.push(&item{kind: itClose})
	case 'H':
		writeFrame(w, f)
	case 'S':
		writeFrame(w, f)
		r.push(&item{kind: itSync})
		r.await = true
		// A Sync the client sent before its extended COPY began, read
		// here only after the server's CopyInResponse: the server ignores
		// it in COPY, so it waits for another once the COPY ends, as
		// when the CopyInResponse comes after the Sync.
		r.needSync = r.needSync || r.copyIn && r.run == nil
	case 'F':
		writeFrame(w, f)
		r.push(&item{kind: itFcall})
		r.push(&item{kind: itSync})
		r.await = true
	default:
		r.protocol(fmt.Errorf("unexpected message type %q", f.typ))
	}
}

// protocol ends a client that broke the protocol, as the server would.
func (r *relay) protocol(err error) {
	r.sendClient(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "08P01",
		Message: "jukebox booth: " + err.Error()})
	r.leave()
}

// query sends a simple Query as extended messages, one statement at a
// time up to any COPY.
func (r *relay) query(f frame) {
	m, err := decode(f, &pgproto3.Query{})
	if err != nil {
		r.protocol(err)
		return
	}
	r.await = true
	pieces := split(m.String, r.u.scs())
	if len(pieces) == 0 {
		send(r.u.w, &pgproto3.Sync{})
		r.push(&item{kind: itSync, simple: true, empty: true})
		return
	}
	r.run = &simpleRun{q: m.String, pieces: pieces}
	r.sendRun()
}

func (r *relay) sendRun() {
	run, w := r.run, r.u.w
	for run.next < len(run.pieces) {
		p := run.pieces[run.next]
		run.next++
		info := classify(p.text, r.u.scs())
		info.text = p.text
		off := int32(0)
		if p.start > 0 {
			off = int32(utf8.RuneCountInString(run.q[:p.start]))
		}
		send(w, &pgproto3.Parse{Query: r.rewrite(&info, p.text)})
		send(w, &pgproto3.Bind{})
		send(w, &pgproto3.Describe{ObjectType: 'P'})
		send(w, &pgproto3.Execute{})
		for _, k := range []itemKind{itParse, itBind, itDescP} {
			r.push(&item{kind: k, simple: true, offset: off})
		}
		r.push(&item{kind: itExec, simple: true, info: &info, offset: off})
		if info.kind == kCopy {
			// The server sends nothing more until a Flush or Sync; one
			// that arrives during COPY FROM STDIN is ignored, so another
			// follows the client's CopyDone.
			send(w, &pgproto3.Flush{})
			run.paused = true
			return
		}
	}
	send(w, &pgproto3.Sync{})
	r.push(&item{kind: itSync, simple: true})
	run.synced = true
}

// pop takes the oldest pending item, which must be one of kinds.
func (r *relay) pop(kinds ...itemKind) *item {
	if len(r.pending) > 0 {
		for _, k := range kinds {
			if r.pending[0].kind == k {
				it := r.pending[0]
				r.pending = r.pending[1:]
				return it
			}
		}
	}
	r.broke(errors.New("the server answered a message the relay did not send"))
	return nil
}

func (r *relay) fromServer(f frame) {
	if trace != nil {
		trace("S %c %d pending=%d", f.typ, len(f.body), len(r.pending))
	}
	if len(r.pending) > 0 && r.pending[0].kind == itInternal {
		r.fromServerInternal(f)
		return
	}
	switch f.typ {
	case '1', '2', 'n': // ParseComplete, BindComplete, NoData
		k := map[byte][]itemKind{'1': {itParse}, '2': {itBind}, 'n': {itDescS, itDescP}}[f.typ]
		if it := r.pop(k...); it != nil && !it.simple {
			r.toClient(f)
		}
	case '3': // CloseComplete
		if r.pop(itClose) != nil {
			r.toClient(f)
		}
	case 't': // ParameterDescription: the first half of a statement's Describe
		if len(r.pending) == 0 || r.pending[0].kind != itDescS {
			r.broke(errors.New("unexpected ParameterDescription"))
			return
		}
		r.toClient(f)
	case 'T': // RowDescription
		if r.pop(itDescS, itDescP) != nil {
			r.toClient(f)
		}
	case 'G': // CopyInResponse
		if r.gone {
			// No one will send the data. The server ignored any Sync sent
			// since the COPY began; an extended exchange needs another.
			send(r.u.w, &pgproto3.CopyFail{Message: "jukebox booth: the client disconnected"})
			if r.run == nil {
				send(r.u.w, &pgproto3.Sync{})
			}
			return
		}
		r.copyIn = true
		if r.await && r.run == nil {
			r.needSync = true
		}
		r.toClient(f)
	case 'C':
		it := r.pop(itExec)
		if it == nil {
			return
		}
		m, err := decode(f, &pgproto3.CommandComplete{})
		if err != nil {
			r.broke(err)
			return
		}
		r.note(it.info, string(m.CommandTag))
		if tag := r.complete(it.info, string(m.CommandTag)); tag != string(m.CommandTag) {
			r.sendClient(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
		} else {
			r.toClient(f)
		}
		if it.simple && it.info.kind == kCopy && r.run != nil && r.run.paused {
			r.run.paused = false
			r.sendRun()
		}
	case 'I', 's': // EmptyQueryResponse, PortalSuspended
		if r.pop(itExec) != nil {
			r.toClient(f)
		}
	case 'V': // FunctionCallResponse
		if r.pop(itFcall) != nil {
			r.toClient(f)
		}
	case 'E':
		r.onError(f)
	case 'Z':
		r.onReady(f)
	case 'S':
		r.u.noteParam(f)
		r.toClient(f)
	default: // DataRow, copy data, notices, notifications
		r.toClient(f)
	}
}

func (r *relay) fromServerInternal(f frame) {
	it := r.pending[0]
	switch f.typ {
	case 'E':
		if m, err := decode(f, &pgproto3.ErrorResponse{}); err == nil && it.err == nil {
			it.err = pgconn.ErrorResponseToPgError(m)
		}
	case 'S':
		r.u.noteParam(f)
		r.toClient(f)
	case 'Z':
		r.pending = r.pending[1:]
		if it.err != nil && it.err.Code == "57014" && it.again != "" && it.tries < 2 && len(r.pending) == 0 {
			// A cancel that ended the statement before can stop this one
			// too: PostgreSQL's postmaster signals the backend and then its
			// process group, and under load the second signal lands after
			// the first was handled. Work that rolls back to the booth's
			// savepoint (the work in it is being undone) runs again.
			send(r.u.w, &pgproto3.Query{String: it.again})
			r.push(&item{kind: itInternal, again: it.again, tries: it.tries + 1})
			return
		}
		if it.err != nil {
			r.broke(fmt.Errorf("the booth's own savepoint work failed: %w", it.err))
		} else if len(f.body) == 0 || f.body[0] != 'T' {
			r.broke(errors.New("the session's transaction ended outside the booth"))
		}
	}
}

// onError: the server skips what is left up to the next Sync.
func (r *relay) onError(f frame) {
	m, err := decode(f, &pgproto3.ErrorResponse{})
	if err != nil {
		r.broke(err)
		return
	}
	var head *item
	if len(r.pending) > 0 {
		head = r.pending[0]
	}
	for len(r.pending) > 0 && r.pending[0].kind != itSync {
		r.pending = r.pending[1:]
	}
	if r.run != nil && !r.run.synced {
		r.run.next = len(r.run.pieces)
		r.run.paused = false
		r.sendRun() // just the Sync
	}
	r.copyIn = false
	if m.Code == "57014" && r.u.lockCancel.Swap(false) {
		m.Code, m.Message, m.Detail = "40P01", whyLock, ""
		r.sendClient(m)
	} else if head != nil && head.offset > 0 && m.Position > 0 {
		m.Position += head.offset
		r.sendClient(m)
	} else {
		r.toClient(f)
	}
	if m.Severity == "FATAL" || m.Severity == "PANIC" {
		r.broke(fmt.Errorf("the server ended the session: %s", m.Message))
	}
}

// onReady ends an exchange: the client is told the status it would have
// on its own server.
func (r *relay) onReady(f frame) {
	it := r.pop(itSync)
	if it == nil {
		return
	}
	status := byte('I')
	if len(f.body) > 0 {
		status = f.body[0]
	}
	if status == 'I' {
		r.broke(errors.New("the session's transaction ended outside the booth"))
		return
	}
	if it.empty {
		r.sendClient(&pgproto3.EmptyQueryResponse{})
	}
	switch {
	case r.abandoned: // settle rolls it back
		r.drop()
	case r.st.block: // the block goes on: its statements wait for its end
	case status == 'E':
		r.drop()
	default:
		r.fold()
	}
	client := byte('I')
	if r.st.block {
		r.st.failed = status == 'E'
		client = status
	} else if status == 'E' {
		r.dirty = dirtyRollback
	} else {
		r.dirty = dirtyRelease
	}
	r.run, r.await, r.needSync, r.copyIn = nil, false, false, false
	r.inCycle = len(r.pending) > 0
	r.pred = r.st
	r.sendClient(&pgproto3.ReadyForQuery{TxStatus: client})
}

// leave notes that the client went away. An exchange in flight is ended
// (the server is sent what it waits for) and, once it has, undone by
// settle: the client never saw it complete.
func (r *relay) leave() {
	if r.gone {
		return
	}
	r.gone, r.cw = true, nil
	if !r.inCycle {
		return
	}
	r.abandoned = true
	if r.copyIn {
		send(r.u.w, &pgproto3.CopyFail{Message: "jukebox booth: the client disconnected"})
		r.copyIn = false
	}
	switch {
	case r.run != nil && !r.run.synced:
		// The run waits on a COPY: its end, or the CopyFail above or in
		// fromServer, sends the Sync.
		r.run.next = len(r.run.pieces)
	case r.needSync || !r.await:
		send(r.u.w, &pgproto3.Sync{})
		if !r.needSync {
			r.push(&item{kind: itSync})
		}
		r.needSync = false
	}
}

// settle brings the session back to the held transaction's top level
// once the client has left: an open block or an exchange the client did
// not see finish is rolled back, as the server would on a disconnect.
func (r *relay) settle() error {
	rollback := "ROLLBACK TO SAVEPOINT " + spS + "; RELEASE SAVEPOINT " + spBase
	switch {
	case r.abandoned || r.st.block:
		r.drop()
		r.internalAgain(rollback)
	case r.dirty == dirtyRelease:
		// Not run again: a cancel that stops it aborts the savepoint that
		// holds the work, which is lost; the session breaks.
		r.internal("RELEASE SAVEPOINT " + spBase)
	case r.dirty == dirtyRollback:
		r.internalAgain(rollback)
	default:
		return nil
	}
	for r.fatal == nil && len(r.pending) > 0 {
		f, ok, err := r.u.q.pop()
		if !ok {
			if err != nil {
				r.broke(fmt.Errorf("connection to the server lost: %w", err))
				break
			}
			r.flush()
			<-r.u.q.ready
			continue
		}
		r.fromServer(f)
	}
	return r.fatal
}
