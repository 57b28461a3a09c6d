package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestSDKOnTheBoothsOwnPGEndpoint: under record --booth --pg, an SDK
// agent staged SQL on DATABASE_URL, the booth's own PostgreSQL endpoint.
// Seen: its commit said it committed, then the booth's commit failed
// ("prepare postgres: conn closed"), jukebox exited 1 with nothing
// written, and the message sent the user to a recovery that had nothing
// to do. The statement is refused at once, naming the URL to use (the
// server's own), and the run goes on to commit the rest.
func TestSDKOnTheBoothsOwnPGEndpoint(t *testing.T) {
	sdk := filepath.Join(testenv.RepoRoot(t), "python")
	r := newPGRun(t)
	python := testenv.RequirePython(t)
	agent := `
import os
from jukebox import Jukebox, JukeboxError
jb = Jukebox()
with jb.record_agent_turn(agent_name="a", message="m") as tx:
    tx.stage_file_write("notes.txt", "kept")
    try:
        tx.stage_sql(os.environ["DATABASE_URL"], "INSERT INTO ` + r.table + ` VALUES ($1)", ["sdk"])
        print("staged")
    except JukeboxError as e:
        print("refused:", e)
print("done")
`
	must(t, os.WriteFile(filepath.Join(r.ws, "agent.py"), []byte(agent), 0o644))
	t.Setenv("PYTHONPATH", sdk)
	t.Setenv("JUKEBOX_BIN", jukeboxBin())
	code, out, errs := jb(t, "record", "-o", r.tape, "--booth", "--booth-mode", "copy", "--pg", r.dsn, "--commit", "always", "--", python, "agent.py")
	all := out + errs
	if code != ExitOK || !strings.Contains(all, "refused:") || !strings.Contains(all, "the booth's own PostgreSQL endpoint") || !strings.Contains(all, "done") {
		t.Fatalf("exit %d:\n%s", code, all)
	}
	if b, err := os.ReadFile(filepath.Join(r.ws, "notes.txt")); err != nil || string(b) != "kept" {
		t.Errorf("notes.txt: %q %v\n%s", b, err, all)
	}
	if got := r.rows(t); got != "" {
		t.Errorf("rows %q", got)
	}
}

// TestSDKSQLInAKeptBooth: under record --booth --keep an SDK agent's
// PostgreSQL statements were taken and its commit said committed; the
// session ended with the run, its work dropped with no word (record said
// "1 change: 1 write ... kept open", only a later booth status told).
// record refuses --pg with --keep for that reason; the SDK's statement is
// refused at once, saying so, and the run keeps the files.
func TestSDKSQLInAKeptBooth(t *testing.T) {
	sdk := filepath.Join(testenv.RepoRoot(t), "python")
	r := newPGRun(t)
	python := testenv.RequirePython(t)
	agent := `
from jukebox import Jukebox, JukeboxError
jb = Jukebox()
with jb.record_agent_turn(agent_name="db", message="refund") as tx:
    tx.stage_file_write("note.txt", "refund-42 recorded")
    try:
        tx.stage_sql("` + r.dsn + `", "INSERT INTO ` + r.table + ` VALUES ($1)", ["sdk"])
        print("staged")
    except JukeboxError as e:
        print("refused:", e)
print("done")
`
	must(t, os.WriteFile(filepath.Join(r.ws, "agent.py"), []byte(agent), 0o644))
	t.Setenv("PYTHONPATH", sdk)
	t.Setenv("JUKEBOX_BIN", jukeboxBin())
	code, out, errs := jb(t, "record", "-o", r.tape, "--booth", "--booth-mode", "copy", "--keep", "--commit", "never", "--", python, "agent.py")
	all := out + errs
	if code != ExitOK || !strings.Contains(all, "refused:") || !strings.Contains(all, "cannot outlive the run") || strings.Contains(out, "staged\n") {
		t.Fatalf("exit %d:\n%s", code, all)
	}
	wantCode(t, ExitOK, "booth", "rollback", "-C", r.ws)
	if got := r.rows(t); got != "" {
		t.Errorf("rows %q", got)
	}
}
