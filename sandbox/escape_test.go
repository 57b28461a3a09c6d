//go:build linux

package sandbox

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestEscapeCatalogue tries every way out of the workspace we know of.
// Each must be refused with the right sentinel and an error naming the path.
func TestEscapeCatalogue(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	must(t, os.WriteFile(secret, []byte("s"), 0o644))
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{
		"ok.txt": "ok", "sub/f": "f",
		"out": "-> " + outside, "up": "-> ..", "l1": "-> l2", "l2": "-> sub/../../",
		"loop1": "-> loop2", "loop2": "-> loop1", "abs-in": "-> " + filepath.Join(ws, "sub"),
	})
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	write := func(name string) error { return tx.Files().WriteFile(name, []byte("x"), 0o644) }
	cases := []struct {
		name string
		try  func() error
		want error
	}{
		{"dotdot", func() error { return write("../x") }, ErrEscape},
		{"dotdot-inner", func() error { return write("sub/../../x") }, ErrEscape},
		{"absolute", func() error { return write("/etc/passwd") }, ErrEscape},
		{"empty", func() error { return write("") }, ErrInvalidPath},
		{"root", func() error { return write(".") }, ErrInvalidPath},
		{"nul", func() error { return write("a\x00b") }, ErrInvalidPath},
		{"state-dir", func() error { return write(".jukebox/booth/x") }, ErrStatePath},
		{"symlink-out", func() error { return write("out/secret") }, ErrEscape},
		{"symlink-up", func() error { return write("up/x") }, ErrEscape},
		{"symlink-chain", func() error { return write("l1/x") }, ErrEscape},
		{"symlink-loop", func() error { return write("loop1/x") }, ErrSymlinkLoop},
		{"read-through-symlink", func() error { _, err := tx.Files().ReadFile("out/secret"); return err }, ErrEscape},
		{"chmod-through-symlink", func() error { return tx.Files().Chmod("out/secret", 0o777) }, ErrEscape},
		{"removeall-dotdot", func() error { return tx.Files().RemoveAll("..") }, ErrEscape},
		// A symlink is data: staging one that points out is fine, staging
		// through it is not.
		{"through-staged-abs-symlink", func() error { must(t, tx.Files().Symlink("/etc", "s1")); return write("s1/passwd") }, ErrEscape},
		{"through-staged-rel-symlink", func() error { must(t, tx.Files().Symlink("../../etc", "sub/s2")); return write("sub/s2/x") }, ErrEscape},
		{"mkdir-through-staged-symlink", func() error { must(t, tx.Files().Symlink("..", "s3")); return tx.Files().Mkdir("s3/d", 0o755) }, ErrEscape},
		{"mkdir-state", func() error { return tx.Files().Mkdir(".jukebox/booth/evil", 0o755) }, ErrStatePath},
	}
	for _, c := range cases {
		err := c.try()
		var pe *PathError
		if !errors.Is(err, c.want) || !errors.As(err, &pe) || (pe.Path == "" && c.name != "empty") {
			t.Errorf("%s: got %v, want %v naming the path", c.name, err, c.want)
		}
	}
	if err := write("abs-in/inside"); err != nil {
		t.Errorf("absolute symlink inside the workspace refused: %v", err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "s" {
		t.Fatal("secret changed")
	}
}

// TestEscapeInStagingArea plants, straight into the upper dir, what a
// child process in the kernel overlay could leave there; Diff must refuse
// each one (listing it in Refused) and Commit must leave it out.
// (Symlinks out are data, committed as links: TestSymlinksAreData.)
func TestEscapeInStagingArea(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	must(t, os.WriteFile(secret, []byte("s"), 0o644))
	plant := []struct {
		name string
		make func(p string) error
		want RefusalKind
	}{
		{"hardlink-out", func(p string) error { return os.Link(secret, p) }, RefusedHardLink},
		{"device", func(p string) error { return syscall.Mknod(p, syscall.S_IFCHR|0o600, 1<<8|3) }, RefusedDevice},
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o600) }, RefusedFIFO},
		{"socket", func(p string) error {
			l, err := net.Listen("unix", p)
			if err == nil {
				l.(*net.UnixListener).SetUnlinkOnClose(false)
				l.Close()
			}
			return err
		}, RefusedSocket},
	}
	for _, c := range plant {
		ws := t.TempDir()
		mkTree(t, ws, map[string]string{"a.txt": "a"})
		before := treeHash(t, ws)
		tx, err := Begin(ws, Options{})
		must(t, err)
		if err := c.make(filepath.Join(tx.StateDir(), "upper", c.name)); err != nil {
			t.Logf("%s: cannot plant here: %v", c.name, err)
			continue
		}
		cs, derr := tx.Diff()
		if derr != nil || len(cs.Refused) != 1 || cs.Refused[0].Kind != c.want || cs.Refused[0].Path != c.name || len(cs.Changes) != 0 {
			t.Errorf("%s: diff %+v, %v; want one refusal of kind %s", c.name, cs, derr, c.want)
		}
		if _, cerr := tx.Commit(ctx); cerr != nil {
			t.Errorf("%s: commit: %v", c.name, cerr)
		}
		if treeHash(t, ws) != before {
			t.Errorf("%s: refused commit changed the workspace", c.name)
		}
	}
}

// TestParentSwappedForSymlink: a real directory replaced by a symlink out
// after staging must not carry the commit outside.
func TestParentSwappedForSymlink(t *testing.T) {
	outside := t.TempDir()
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"dir/f": "f"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	must(t, tx.Files().WriteFile("dir/g", []byte("g"), 0o644))
	must(t, os.RemoveAll(filepath.Join(ws, "dir")))
	must(t, os.Symlink(outside, filepath.Join(ws, "dir")))
	_, err = tx.Commit(ctx)
	if !errors.Is(err, ErrConflict) && !errors.Is(err, ErrEscape) {
		t.Fatalf("commit through swapped parent: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "g")); err == nil {
		t.Fatal("file written outside the workspace")
	}
}
