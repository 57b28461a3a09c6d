package pgbooth

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jukebox-os/jukebox/sandbox"
)

// participant is the endpoint's part in the booth's two-phase commit:
// every session it opened, prepared, committed and rolled back together.
type participant struct{ s *Server }

var _ sandbox.Participant = participant{}

func (participant) Kind() string { return Kind }

// subGID is the prepared-transaction id of session n.
func subGID(gid string, n int) string { return fmt.Sprintf("%s.%d", gid, n) }

// Prepare ends the clients and PREPAREs each session. If one cannot be
// prepared, every session is rolled back and the error says which.
func (p participant) Prepare(ctx context.Context, gid string) error {
	ups := p.s.sessions()
	for _, u := range ups {
		if u.broken != nil {
			p.abort(ctx, ups)
			return fmt.Errorf("PostgreSQL session %d: %w", u.n, u.broken)
		}
	}
	for _, u := range ups {
		sub := subGID(gid, u.n)
		tag, _, err := u.exec(ctx, "PREPARE TRANSACTION "+literal(sub))
		if err == nil && tag != "PREPARE TRANSACTION" {
			err = errors.New("its transaction had failed, and PostgreSQL rolled it back")
		}
		if err != nil {
			p.abort(ctx, ups)
			return fmt.Errorf("PostgreSQL session %d: prepare: %w", u.n, err)
		}
		u.prepared = sub
	}
	return nil
}

// CommitPrepared commits every prepared session. It tries them all; a
// session left prepared is finished by Resolver.
func (p participant) CommitPrepared(ctx context.Context, gid string) error {
	return p.finish(ctx, "COMMIT PREPARED ")
}

// RollbackPrepared rolls back every session.
func (p participant) RollbackPrepared(ctx context.Context, gid string) error {
	return p.finish(ctx, "ROLLBACK PREPARED ")
}

// Rollback rolls back sessions that were never prepared (and any that
// were).
func (p participant) Rollback(ctx context.Context) error {
	return p.abort(ctx, p.s.sessions())
}

func (p participant) finish(ctx context.Context, verb string) error {
	var first error
	for _, u := range p.s.sessions() {
		if u.ended {
			continue
		}
		if u.prepared == "" {
			if verb == "COMMIT PREPARED " && first == nil {
				first = fmt.Errorf("PostgreSQL session %d was never prepared", u.n)
			}
			u.close()
			continue
		}
		if _, _, err := u.exec(ctx, verb+literal(u.prepared)); err != nil && first == nil {
			first = fmt.Errorf("PostgreSQL session %d: %s%s: %w", u.n, verb, u.prepared, err)
		}
		u.close()
	}
	return first
}

// abort rolls back every session, prepared or not, and closes it.
func (p participant) abort(ctx context.Context, ups []*upstream) error {
	var first error
	for _, u := range ups {
		if u.ended {
			continue
		}
		sql := "ROLLBACK"
		if u.prepared != "" {
			sql = "ROLLBACK PREPARED " + literal(u.prepared)
		}
		if u.broken == nil || u.prepared != "" {
			if _, _, err := u.exec(ctx, sql); err != nil && first == nil && u.prepared != "" {
				first = fmt.Errorf("PostgreSQL session %d: %s: %w", u.n, sql, err)
			}
		}
		u.close()
	}
	return first
}

func (u *upstream) close() {
	u.ended = true
	u.conn.Close()
}

// Resolver finishes the sessions of an interrupted commit, as the booth
// journal says: COMMIT PREPARED or ROLLBACK PREPARED of each "<gid>.<n>"
// still prepared. Pass it to sandbox.Recover. It connects only when a
// journal names this kind of participant.
type Resolver struct {
	DSN    string
	Config *pgconn.Config // instead of DSN
}

var _ sandbox.Resolver = Resolver{}

func (Resolver) Kind() string { return Kind }

// Resolve succeeds when nothing under gid is prepared any more.
func (r Resolver) Resolve(ctx context.Context, gid string, commit bool) error {
	cfg := r.Config
	if cfg == nil {
		var err error
		if cfg, err = pgconn.ParseConfig(r.DSN); err != nil {
			return err
		}
	}
	pc, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("pgbooth: resolve %s: %w", gid, err)
	}
	defer pc.Close(context.Background())
	res := pc.ExecParams(ctx, "SELECT gid FROM pg_catalog.pg_prepared_xacts WHERE database = pg_catalog.current_database() "+
		"AND (gid = $1 OR pg_catalog.left(gid, pg_catalog.length($1) + 1) = $1 || '.')",
		[][]byte{[]byte(gid)}, nil, nil, nil).Read()
	if res.Err != nil {
		return fmt.Errorf("pgbooth: resolve %s: %w", gid, res.Err)
	}
	verb := "ROLLBACK PREPARED "
	if commit {
		verb = "COMMIT PREPARED "
	}
	for _, row := range res.Rows {
		sub := string(row[0])
		if _, err := pc.Exec(ctx, verb+literal(sub)).ReadAll(); err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "42704" { // finished meanwhile
				continue
			}
			return fmt.Errorf("pgbooth: resolve %s: %w", sub, err)
		}
	}
	return nil
}
