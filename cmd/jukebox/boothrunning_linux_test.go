package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBoothCommandsLeaveARunningTransaction: booth status, rollback and
// commit while a record --booth is still running. Seen: status said the
// run's live work was lost and advised a rollback; booth rollback
// discarded the running run's staging area, and the run then failed at
// its commit. Now status says it is running, rollback and commit refuse
// it, and the run commits as it would have.
func TestBoothCommandsLeaveARunningTransaction(t *testing.T) {
	requireBooth(t)
	t.Parallel()
	ws := t.TempDir()
	run := jukeboxCmd(t.Context(), ws, "record", "--booth", "--commit", "always", "-o", filepath.Join(t.TempDir(), "run.jbx"),
		"--", "sh", "-c", "echo hi > a.txt; read line || true")
	stdin, err := run.StdinPipe()
	must(t, err)
	var out strings.Builder
	run.Stdout, run.Stderr = &out, &out
	must(t, run.Start())
	defer run.Process.Kill()
	// The transaction appears, running, once the run has begun it.
	var rows []struct {
		ID      string `json:"id"`
		Running bool   `json:"running"`
	}
	for deadline := time.Now().Add(time.Minute); ; {
		_, o, _ := jb(t, "booth", "status", "--json", "-C", ws)
		rows = nil
		json.Unmarshal([]byte(o), &rows)
		if len(rows) == 1 && rows[0].Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no running transaction in booth status: %s\nrun: %s", o, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, o, _ := jb(t, "booth", "status", "-C", ws); !strings.Contains(o, "running") || strings.Contains(o, "lost") {
		t.Errorf("booth status: %s", o)
	}
	for _, cmd := range []string{"rollback", "commit"} {
		code, _, errs := jb(t, "booth", cmd, "-C", ws)
		if code == ExitOK || !strings.Contains(errs, "in use by a running jukebox") {
			t.Errorf("booth %s of a running transaction: exit %d: %s", cmd, code, errs)
		}
	}
	stdin.Close()
	if err := run.Wait(); err != nil {
		t.Fatalf("the run: %v\n%s", err, out.String())
	}
	if b, err := os.ReadFile(filepath.Join(ws, "a.txt")); err != nil || string(b) != "hi\n" {
		t.Fatalf("a.txt after the run: %q %v\n%s", b, err, out.String())
	}
}
