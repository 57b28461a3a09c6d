package main

import (
	"context"
	"fmt"
	"os"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/sandbox/pgbooth"
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
		fmt.Fprintln(p.env.Stderr, "jukebox: booth: the agent's SQL was rolled back: its PostgreSQL sessions cannot stay open after the run")
	}
}

// booth is fork's booth flags in record's form.
func (c *ForkCmd) booth() *boothFlags {
	return &boothFlags{Booth: !c.NoBooth, Commit: c.Commit, Keep: c.Keep, BoothMode: c.BoothMode, PG: c.PG}
}
