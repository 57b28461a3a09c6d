package sandbox

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestSymlinkChainsLeadOut: links that each stay inside the workspace,
// followed one through another, led out of it unmarked (b/c -> ../d/e,
// d/e -> .., a -> b/c/.. is the workspace's parent), as did one link
// through a folder link the workspace held already (pnpm's, npm link's).
func TestSymlinkChainsLeadOut(t *testing.T) {
	ws := t.TempDir()
	must(t, os.Symlink(t.TempDir(), filepath.Join(ws, "linked")))
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	f := tx.Files()
	must(t, f.MkdirAll("b", 0o755))
	must(t, f.MkdirAll("d", 0o755))
	must(t, f.Symlink("../d/e", "b/c"))
	must(t, f.Symlink("..", "d/e"))
	must(t, f.Symlink("b/c/..", "a"))
	must(t, f.Symlink("b/c/../outside.txt", "leak"))
	must(t, f.Symlink("linked/../x", "through"))
	must(t, f.Symlink("b/c/d", "inside")) // the workspace's d
	must(t, f.Symlink("loop2", "loop1"))
	must(t, f.Symlink("loop1", "loop2"))
	cs, err := tx.Diff()
	must(t, err)
	got := map[string]bool{}
	for _, c := range cs.Changes {
		if c.Op == OpSymlink {
			got[c.Path] = strings.Contains(strings.Join(c.Sensitive(), "; "), "symlink pointing outside the workspace")
		}
	}
	want := map[string]bool{"b/c": false, "d/e": false, "a": true, "leak": true, "through": true, "inside": false, "loop1": false, "loop2": false}
	if !maps.Equal(got, want) {
		t.Errorf("leads out: got %v, want %v", got, want)
	}
}

// TestNewFileOwnerShown: an agent run as root chowned a new file to
// another account; the commit links in the staged inode, owner and all,
// and the review showed neither the owner nor a !, where a file it
// changed the owner of showed the owner, unmarked.
func TestNewFileOwnerShown(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, "root", "only root gives a file to another account")
	}
	ws := t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, "build.sh"), []byte("echo build\n"), 0o644))
	// Another account's file the agent recreated, now yours: a change of
	// owner, no second look (it said "owned by 0:0, not by you").
	must(t, os.WriteFile(filepath.Join(ws, "gen.txt"), []byte("old\n"), 0o644))
	must(t, os.Lchown(filepath.Join(ws, "gen.txt"), 65534, 65534))
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	f := tx.Files()
	must(t, f.WriteFile("deploy.sh", []byte("echo deploying\n"), 0o644))
	must(t, f.WriteFile("mine.sh", []byte("echo mine\n"), 0o644))
	must(t, f.WriteFile("build.sh", []byte("echo build v2\n"), 0o644))
	must(t, f.Remove("gen.txt"))
	must(t, f.WriteFile("gen.txt", []byte("new!\n"), 0o644))
	for _, p := range []string{"deploy.sh", "build.sh"} {
		must(t, os.Lchown(tx.up(p), 65534, 65534))
	}
	cs, err := tx.Diff()
	must(t, err)
	for _, c := range cs.Changes {
		why := strings.Join(c.Sensitive(), "; ")
		switch c.Path {
		case "deploy.sh", "build.sh":
			if c.Owner != "65534:65534" || !strings.Contains(c.String(), "owner 65534:65534") || !strings.Contains(why, "owned by 65534:65534, not by you") {
				t.Errorf("%s: owner %q, %q, why %q", c.Path, c.Owner, c.String(), why)
			}
		case "gen.txt":
			if c.Owner != "0:0" || why != "" {
				t.Errorf("%s: owner %q, why %q", c.Path, c.Owner, why)
			}
		case "mine.sh":
			if c.Owner != "" || why != "" {
				t.Errorf("%s: owner %q, why %q", c.Path, c.Owner, why)
			}
		}
	}
}
