package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestBoothNamesForeignOwnedFiles: as a non-root user, a file of the
// user's whose group is not the user's (a shared-group repository, a
// file made with sudo) cannot be changed or renamed in the overlay
// booth, which maps only the caller's ids: the agent gets "Value too
// large for defined data type". Deleting one works (a whiteout, no copy
// up). The run says which files and why, and not that a delete fails.
func TestBoothNamesForeignOwnedFiles(t *testing.T) {
	if os.Getuid() != 0 {
		testenv.Unavailable(t, "root, to make a file of another group and run the booth as nobody", "run the tests as root")
	}
	requireConfinedBooth(t)
	base, bin := nobodyBinary(t, 0o777)
	ws := filepath.Join(base, "ws")
	must(t, os.MkdirAll(filepath.Join(ws, "src"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "src", "shared.txt"), []byte("a\n"), 0o664))
	must(t, os.WriteFile(filepath.Join(ws, "mine.txt"), []byte("b\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, "src", "gone.txt"), []byte("c\n"), 0o664))
	for _, p := range []string{ws, filepath.Join(ws, "src"), filepath.Join(ws, "mine.txt")} {
		must(t, os.Chown(p, 65534, 65534))
	}
	must(t, os.Chown(filepath.Join(ws, "src", "shared.txt"), 65534, 0)) // nobody's, group root
	must(t, os.Chown(filepath.Join(ws, "src", "gone.txt"), 65534, 0))
	cmd := exec.Command(bin, "record", "--booth", "--commit", "never", "-o", filepath.Join(base, "t.jbx"), "--",
		"sh", "-c", "echo more >> src/shared.txt; echo more >> mine.txt; rm src/gone.txt && echo removed gone")
	asNobody(cmd, base)
	cmd.Dir = ws
	out, _ := cmd.CombinedOutput()
	text := string(out)
	if !strings.Contains(text, "Value too large") {
		t.Fatalf("the agent changed a file of another group in a non-root booth (the kernel allows it now? then drop this note):\n%s", text)
	}
	if !strings.Contains(text, "2 entries of the workspace belong to another user or group") || !strings.Contains(text, "src/shared.txt") {
		t.Errorf("the run does not say which file the agent could not change, or why:\n%s", text)
	}
	if !strings.Contains(text, "removed gone") || !strings.Contains(text, "delete src/gone.txt") {
		t.Fatalf("the agent could not delete a file of another group (the kernel refuses it now? then say so in the note):\n%s", text)
	}
	if strings.Contains(text, "rename or delete them") || !strings.Contains(text, "deleting them works") {
		t.Errorf("the note says a delete fails, or not that it works, though the agent deleted one:\n%s", text)
	}
	if strings.Contains(text, "mine.txt\" ") || strings.Contains(text, "among them \"mine.txt") {
		t.Errorf("a file of the user's own ids is named as foreign:\n%s", text)
	}
}
