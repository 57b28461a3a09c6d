package pgbooth

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Statements are listed as the agent wrote them, so a write made inside
// a function, a trigger or a DO block names no table. The server's locks
// do: lockedTables asks, on a connection of its own, which tables that
// existed before the run each session holds a write lock on, and which
// of them an exclusive lock (DROP, TRUNCATE, most ALTERs). Tables the
// sessions made are invisible to another connection until the commit;
// the CREATE that made them is listed.

// writeModes are the lock modes a write takes; AccessExclusiveLock is
// the one DROP, TRUNCATE and ALTER TABLE take.
const writeModes = "'RowExclusiveLock','ShareUpdateExclusiveLock','ShareLock','ShareRowExclusiveLock','ExclusiveLock','AccessExclusiveLock'"

// tableLocks are the tables a session holds write locks on; exclusive
// maps those it holds exclusively.
type tableLocks struct {
	tables    []string
	exclusive map[string]bool
}

// lockedTables returns each session's table locks, by backend pid; nil
// when the server cannot be asked (nothing is added then).
func (s *Server) lockedTables(ctx context.Context, ups []*upstream) map[uint32]*tableLocks {
	var pids []string
	for _, u := range ups {
		if u.broken == nil && !u.ended {
			pids = append(pids, strconv.FormatUint(uint64(u.pid), 10))
		}
	}
	if len(pids) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ConnectTimeout)
	defer cancel()
	pc, err := pgconn.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return nil
	}
	defer pc.Close(context.Background())
	res := pc.ExecParams(ctx, "SELECT l.pid, c.oid::pg_catalog.regclass::text, l.mode = 'AccessExclusiveLock' "+
		"FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_class c ON c.oid = l.relation "+
		"WHERE l.locktype = 'relation' AND l.granted AND c.relkind IN ('r','p','m','f','v') "+
		"AND l.mode IN ("+writeModes+") AND l.pid = ANY($1::int[])",
		[][]byte{[]byte("{" + strings.Join(pids, ",") + "}")}, nil, nil, nil).Read()
	if res.Err != nil {
		return nil
	}
	out := map[uint32]*tableLocks{}
	for _, row := range res.Rows {
		pid64, _ := strconv.ParseUint(string(row[0]), 10, 32)
		tl := out[uint32(pid64)]
		if tl == nil {
			tl = &tableLocks{exclusive: map[string]bool{}}
			out[uint32(pid64)] = tl
		}
		name := string(row[1])
		if !slices.Contains(tl.tables, name) {
			tl.tables = append(tl.tables, name)
		}
		if string(row[2]) == "t" {
			tl.exclusive[name] = true
		}
	}
	return out
}

// unmarked says why a session's exclusive locks deserve a second look:
// one per table no sensitive statement of the session names.
func unmarked(tl *tableLocks, named map[string]bool) []string {
	var why []string
	for _, t := range tl.tables {
		if tl.exclusive[t] && !named[t] {
			why = append(why, "holds an exclusive lock on "+t+" (dropped, truncated or altered) that no statement marked here names")
		}
	}
	return why
}
