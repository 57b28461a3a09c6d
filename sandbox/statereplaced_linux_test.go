package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestStateReplacedNotCommitted: an agent of the same user replaced the
// transaction's staging area (or its whole folder) by a link to another
// folder: the commit linked that folder's files into the workspace (and
// made it 0777), or wrote its journal there and moved a workspace file
// out. The commit refuses state that is not what Begin made.
func TestStateReplacedNotCommitted(t *testing.T) {
	for _, which := range []string{"upper", "tx"} {
		t.Run(which, func(t *testing.T) {
			ws, outside := t.TempDir(), t.TempDir()
			must(t, os.WriteFile(filepath.Join(ws, "kept.txt"), []byte("mine"), 0o644))
			must(t, os.WriteFile(filepath.Join(outside, "planted.txt"), []byte("theirs"), 0o644))
			tx, err := Begin(ws, Options{})
			must(t, err)
			defer tx.Rollback(context.Background())
			must(t, tx.Files().WriteFile("staged.txt", []byte("staged"), 0o644))
			target := tx.upper
			if which == "tx" {
				target = tx.dir
			}
			must(t, os.Rename(target, target+".moved"))
			must(t, os.Symlink(outside, target))
			_, err = tx.Commit(context.Background())
			if !errors.Is(err, ErrStateReplaced) {
				t.Errorf("a commit over replaced state: %v", err)
			}
			if _, err := os.Stat(filepath.Join(ws, "planted.txt")); err == nil {
				t.Error("a file of the folder linked in was committed into the workspace")
			}
			if b, err := os.ReadFile(filepath.Join(ws, "kept.txt")); err != nil || string(b) != "mine" {
				t.Errorf("the workspace's file: %q, %v", b, err)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 1 {
				t.Errorf("the commit wrote into the folder linked in: %d entries", len(ents))
			}
			st, _ := os.Stat(ws)
			if st.Mode().Perm()&0o022 != 0 {
				t.Errorf("the workspace is %v", st.Mode().Perm())
			}
		})
	}
}
