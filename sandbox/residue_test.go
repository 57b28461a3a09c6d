//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRealHardLinkPairRefused: a write to a real file that has another
// name (an existing hard-link pair) is refused, as README says, in-process
// and in the copy fallback alike: committing it would split the pair, the
// other name keeping the old content. The pair stays linked and unchanged.
func TestRealHardLinkPairRefused(t *testing.T) {
	for _, mode := range []string{"files", "copy"} {
		t.Run(mode, func(t *testing.T) {
			ws := filepath.Join(t.TempDir(), "ws")
			mkTree(t, ws, map[string]string{"a": "old\n", "other.txt": "o"})
			must(t, os.Link(filepath.Join(ws, "a"), filepath.Join(ws, "b")))
			tx, err := Begin(ws, Options{})
			must(t, err)
			defer tx.Rollback(ctx)
			if mode == "files" {
				must(t, tx.Files().WriteFile("a", []byte("new\n"), 0o644))
				must(t, tx.Files().WriteFile("other.txt", []byte("p"), 0o644))
			} else {
				copyExec(t, tx, `echo new > a; echo p > other.txt`)
			}
			cs, err := tx.Diff()
			must(t, err)
			if len(cs.Refused) != 1 || cs.Refused[0].Path != "a" || cs.Refused[0].Kind != RefusedHardLink {
				t.Fatalf("refused %+v, want a (hard link); changes %s", cs.Refused, ops(cs))
			}
			_, err = tx.Commit(ctx)
			must(t, err)
			fa, err := os.Stat(filepath.Join(ws, "a"))
			must(t, err)
			fb, err := os.Stat(filepath.Join(ws, "b"))
			must(t, err)
			if got := readTree(t, ws); got["a"] != "old\n" || got["b"] != "old\n" || !os.SameFile(fa, fb) {
				t.Errorf("the pair: a %q, b %q, still linked %v", got["a"], got["b"], os.SameFile(fa, fb))
			}
		})
	}
}
