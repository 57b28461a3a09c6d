package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jukebox-os/jukebox/controlapi"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestConcurrentCommitAndRollback: three commits and six rollbacks of one
// SDK transaction at once. The transaction committed (its file in the
// workspace, a tx.commit on the tape), and the tape then also held
// tx.rollback frames for it, the losers' (a losing commit recorded as
// "commit failed: transaction is closed"), each answered 500. One of them
// ends it, on the tape once; the others are answered as requests that
// came after it (404), and write nothing.
func TestConcurrentCommitAndRollback(t *testing.T) {
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ws, tape := t.TempDir(), filepath.Join(t.TempDir(), "race.jbx")
	c, stop := serveClient(t, ws, tape)
	ctx := context.Background()
	begun, err := c.Begin(ctx, controlapi.Begin{Name: "t"})
	must(t, err)
	tx, err := c.Tx(ctx, begun.Tx)
	must(t, err)
	_, err = tx.Write(ctx, controlapi.Write{Path: "ledger.txt", Content: new("paid\n")})
	must(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := range 9 {
		wg.Go(func() {
			var err error
			if i < 3 {
				_, err = tx.Commit(ctx)
			} else {
				_, err = tx.Rollback(ctx, controlapi.Rollback{Reason: "r"})
			}
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				ok++
			} else if ce, is := errors.AsType[*controlapi.Error](err); !is || ce.Status != 404 {
				t.Errorf("a request that lost: %v, want 404", err)
			}
		})
	}
	wg.Wait()
	must(t, stop())
	if ok != 1 {
		t.Errorf("%d requests ended the transaction, want 1", ok)
	}
	tp, err := tapefmt.Open(tape)
	must(t, err)
	defer tp.Close()
	ends := 0
	var committed bool
	for f, err := range tp.Frames(tapefmt.KindTxCommit, tapefmt.KindTxRollback) {
		must(t, err)
		ends++
		committed = f.Kind == tapefmt.KindTxCommit
	}
	_, statErr := os.Stat(filepath.Join(ws, "ledger.txt"))
	if ends != 1 || committed != (statErr == nil) {
		t.Errorf("%d end frames on the tape (the last a commit: %v), the file committed: %v", ends, committed, statErr == nil)
	}
}
