package sandbox

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// aclGranting is a POSIX ACL (system.posix_acl_access, version 2) that
// gives uid write access beside the owner.
func aclGranting(uid uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range []struct {
		tag, perm uint16
		id        uint32
	}{{0x01, 6, ^uint32(0)}, {0x02, 6, uid}, {0x04, 4, ^uint32(0)}, {0x10, 6, ^uint32(0)}, {0x20, 4, ^uint32(0)}} {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b
}

// TestCommitStripsACLsAndCapabilities: the commit links a new file's
// staged inode into the workspace. Seen: an agent (root) set an ACL on
// the files it wrote that let another uid write them; the change set and
// the tape showed a mode, nothing else, and the commit carried the ACL
// onto new.txt (nobody then appended to it). ACLs are not committed (nor
// file capabilities, which the booth's user namespace does not let an
// agent set): the file is left with the mode the review showed.
func TestCommitStripsACLsAndCapabilities(t *testing.T) {
	if os.Getuid() != 0 {
		testenv.Unavailable(t, "root (TestEscapeCatalogueAsUser covers what a user can reach)", "run the tests as root")
	}
	requireOverlay(t)
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"existing.txt": "orig"})
	acl := filepath.Join(t.TempDir(), "acl")
	must(t, os.WriteFile(acl, aclGranting(65534), 0o644))
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	// In the run: write the files, then set the attributes with the
	// python3 the host has (setfacl need not be installed).
	script := `echo new > new.txt && echo more >> existing.txt &&
/usr/bin/python3 -c 'import os, sys
acl = open(sys.argv[1], "rb").read()
for f in ("new.txt", "existing.txt"):
    os.setxattr(f, "system.posix_acl_access", acl)' ` + acl
	var out bytes.Buffer
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", script}, Stdout: &out, Stderr: &out, Mode: ModeOverlay, Notice: &bytes.Buffer{}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %v, exit %d: %s", err, res.ExitCode, out.String())
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, attr string }{{"new.txt", "system.posix_acl_access"}, {"existing.txt", "system.posix_acl_access"}} {
		if n, err := unix.Lgetxattr(filepath.Join(ws, c.file), c.attr, make([]byte, 256)); err == nil {
			t.Errorf("%s was committed with %s (%d bytes)", c.file, c.attr, n)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "new.txt")); string(b) != "new\n" {
		t.Errorf("new.txt: %q", b)
	}
}
