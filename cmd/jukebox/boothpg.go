package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/sandbox/pgbooth"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// validatePG checks --pg against the other booth flags. Its sessions end
// with the run, so they cannot be kept open for a later decision: --keep
// is refused, and so is --commit ask with no terminal to ask on (which
// would keep the booth open).
func (b *boothFlags) validatePG() error {
	switch {
	case b.PG == "":
		return nil
	case !b.Booth:
		return fmt.Errorf("--pg only applies with --booth")
	case b.Keep:
		return fmt.Errorf("--pg cannot be kept open: its database sessions end with the run; " +
			"choose --commit always, on-success or never instead of --keep")
	case b.Commit == engine.CommitAsk && !haveTerminal():
		return fmt.Errorf("--pg with --commit ask needs a terminal to ask on (its database sessions cannot be " +
			"kept open for later): choose --commit always, on-success or never")
	}
	return nil
}

func haveTerminal() bool {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err == nil {
		tty.Close()
	}
	return err == nil
}

// pgEndpoint is a run's --pg endpoint; nil without --pg.
type pgEndpoint struct {
	srv *pgbooth.Server
	env *Env
}

// startPG starts the --pg endpoint before the agent and wires it into the
// booth: it joins the transaction once begun, the agent gets its
// variables, it stays reachable under --net none, and recovery can finish
// an interrupted commit's sessions. A server that cannot be reached or
// cannot prepare transactions is exit 2.
func startPG(ctx context.Context, dsn string, o *engine.BoothOptions, env *Env) (*pgEndpoint, error) {
	if dsn == "" || o == nil {
		return nil, nil
	}
	srv, err := pgbooth.Start(ctx, dsn)
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	o.Attach = func(_ context.Context, tx *sandbox.Tx) (map[string]string, error) {
		if err := srv.Attach(tx); err != nil {
			return nil, err
		}
		return srv.Env(), nil
	}
	o.Work = func(tx *sandbox.Tx) []tapefmt.SQLSession {
		w := srv.Work()
		if len(w) > 0 {
			// Kept for booth diff after a crash: what was lost with it.
			if data, err := json.Marshal(w); err == nil {
				if err := tx.NoteWork(pgbooth.Kind, data); err != nil {
					fmt.Fprintf(env.Stderr, "jukebox: booth: %v\n", err)
				}
			}
		}
		return w
	}
	o.Resolvers = append(o.Resolvers, srv.Resolver())
	o.Endpoints = append(o.Endpoints, srv.Addr())
	fmt.Fprintf(env.Stderr, "jukebox: booth: PostgreSQL at %s joins the booth through %s (DATABASE_URL)\n", srv.Where(), srv.Addr())
	return &pgEndpoint{srv: srv, env: env}, nil
}

// close ends the endpoint. Sessions the booth did not decide on (it kept
// the transaction open) are rolled back by the server, and it says so.
func (p *pgEndpoint) close() {
	if p == nil {
		return
	}
	p.srv.Close()
	if p.srv.Used() && !p.srv.Decided() {
		fmt.Fprintln(p.env.Stderr, "jukebox: booth: the agent's SQL was rolled back: its PostgreSQL sessions cannot stay open after the run; "+
			"a transaction kept open with it commits nothing (jukebox booth rollback discards its files)")
	}
}

// writeSQL writes the agent's SQL (--pg) for a person deciding on it,
// under a heading (pgbooth.Work: statements escaped, destructive ones
// marked "!"), and returns how many are marked; nothing without SQL.
func writeSQL(w io.Writer, sql pgbooth.Work) int {
	if sql.Empty() {
		return 0
	}
	fmt.Fprintf(w, "and the agent's SQL (--pg), committed or rolled back with them: %s\n%s", sql.Summary(), sql.String())
	return sql.Sensitive()
}

// writeLost says, for booth diff, what work a transaction reopened after
// its run lost (sandbox.Tx.Lost): the SQL the server rolled back when the
// run ended before its decision, listed as it was.
func writeLost(w io.Writer, lost []sandbox.LostWork) {
	for _, l := range lost {
		fmt.Fprintf(w, "LOST: the %s work of this transaction ended with its run, before the decision (PostgreSQL rolled it back); "+
			"booth commit refuses to commit the files without it, booth rollback discards them\n", termtext.Quote(l.Kind))
		if sql := pgbooth.ReadWork(l.Work); l.Kind == pgbooth.Kind && !sql.Empty() {
			fmt.Fprintf(w, "what it held: %s\n%s", sql.Summary(), sql.String())
		}
	}
}

// booth is fork's booth flags in record's form.
func (c *ForkCmd) booth() *boothFlags {
	return &boothFlags{Booth: !c.NoBooth, Commit: c.Commit, Keep: c.Keep, BoothMode: c.BoothMode, PG: c.PG}
}

// lostJSON is a lost participant's work in booth diff --json: its kind,
// and for the --pg endpoint the SQL it held.
type lostJSON struct {
	Kind string       `json:"kind"`
	SQL  pgbooth.Work `json:"sql,omitempty"`
}

// lostDiff is booth diff --json of a transaction with lost work: the
// change set with a "lost" list.
func lostDiff(cs sandbox.ChangeSet, lost []sandbox.LostWork) any {
	out := struct {
		sandbox.ChangeSet
		Lost []lostJSON `json:"lost"`
	}{ChangeSet: cs}
	for _, l := range lost {
		out.Lost = append(out.Lost, lostJSON{Kind: l.Kind, SQL: pgbooth.ReadWork(l.Work)})
	}
	return out
}
