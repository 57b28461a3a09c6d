package pgbooth

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Sessions are separate transactions that stay open until the booth
// decides, so a lock one of them took (a row it updated, a table it
// altered) is held until the end of the run. A second connection of the
// agent's that needs it would wait for ever: the holder cannot end before
// the agent does, and the agent waits on that connection. watchLocks
// breaks such a wait. While two or more sessions exist it asks the server,
// every lockPoll, which of them wait on a lock another one holds, and
// cancels a statement found waiting twice in a row; the client reads a
// deadlock error (40P01) that says why.
var lockPoll = 500 * time.Millisecond

const whyLock = "jukebox booth: this statement waited for a lock that another of the agent's connections holds. " +
	"In the booth each connection's work stays uncommitted, and its locks held, until the run ends, so the wait " +
	"could never end: use one connection at a time, or end the other connection's work first"

func (s *Server) watchLocks(stop <-chan struct{}) {
	var mon *pgconn.PgConn
	defer func() {
		if mon != nil {
			mon.Close(context.Background())
		}
	}()
	suspects := map[uint32]bool{}
	tick := time.NewTicker(lockPoll)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		ours := map[uint32]*upstream{}
		for _, u := range s.ups {
			if u.broken == nil && !u.ended {
				ours[u.pid] = u
			}
		}
		s.mu.Unlock()
		if len(ours) < 2 {
			suspects = map[uint32]bool{}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ConnectTimeout)
		if mon == nil || mon.IsClosed() {
			var err error
			if mon, err = pgconn.ConnectConfig(ctx, s.cfg); err != nil {
				mon = nil
				cancel()
				continue
			}
		}
		var pids []string
		for pid := range ours {
			pids = append(pids, strconv.FormatUint(uint64(pid), 10))
		}
		res := mon.ExecParams(ctx, "SELECT pid, pg_catalog.pg_blocking_pids(pid) FROM pg_catalog.pg_stat_activity "+
			"WHERE pid = ANY($1::int[]) AND wait_event_type = 'Lock'",
			[][]byte{[]byte("{" + strings.Join(pids, ",") + "}")}, nil, nil, nil).Read()
		cancel()
		if res.Err != nil {
			continue
		}
		next := map[uint32]bool{}
		for _, row := range res.Rows {
			pid64, _ := strconv.ParseUint(string(row[0]), 10, 32)
			pid := uint32(pid64)
			for _, b := range strings.Split(strings.Trim(string(row[1]), "{}"), ",") {
				b64, err := strconv.ParseUint(b, 10, 32)
				if err != nil || uint32(b64) == pid || ours[uint32(b64)] == nil {
					continue
				}
				if suspects[pid] {
					ours[pid].lockCancel.Store(true)
					ours[pid].cancel()
				} else {
					next[pid] = true
				}
				break
			}
		}
		suspects = next
	}
}
