package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/sandbox"
)

// plantJournal writes what a cloned repository could carry: a booth
// transaction whose journal (as an earlier release wrote them, without a
// MAC) would write, delete, chmod and symlink outside the workspace.
func plantJournal(t *testing.T, ws, victim, id string) {
	t.Helper()
	up, err := filepath.Rel(ws, victim)
	if err != nil {
		t.Fatal(err)
	}
	up = filepath.ToSlash(up)
	dir := filepath.Join(ws, ".jukebox", "booth", id)
	if err := os.MkdirAll(filepath.Join(dir, "upper", filepath.FromSlash(up)), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "upper", filepath.FromSlash(up), "written"), []byte("pwned"), 0o755)
	data, _ := json.Marshal(map[string]any{"tx": id, "state": "commit", "changes": []map[string]any{
		{"path": up + "/written", "op": "write", "mode": 0o755, "size": 5},
		{"path": up + "/doomed", "op": "delete"},
		{"path": up + "/private", "op": "chmod", "mode": 0o777},
		{"path": up + "/link", "op": "symlink", "target": "/etc/passwd"},
	}})
	if err := os.WriteFile(filepath.Join(dir, "journal.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "tx.json"), []byte(`{"id":"`+id+`","workspace":"/elsewhere"}`), 0o644)
}

// victimFiles are the files outside the workspace a planted journal aims at.
func victimFiles(t *testing.T) (string, func() string) {
	victim := t.TempDir()
	os.WriteFile(filepath.Join(victim, "doomed"), []byte("keep me"), 0o644)
	os.WriteFile(filepath.Join(victim, "private"), []byte("secret"), 0o600)
	state := func() string {
		var b strings.Builder
		ents, _ := os.ReadDir(victim)
		for _, e := range ents {
			fi, _ := e.Info()
			data, _ := os.ReadFile(filepath.Join(victim, e.Name()))
			b.WriteString(e.Name() + " " + fi.Mode().String() + " " + string(data) + "\n")
		}
		return b.String()
	}
	return victim, state
}

// TestBoothPlantedJournal: booth status and booth diff only read; a
// planted journal is listed as unauthenticated by status, recover and
// the commands that change state, never applied, and booth discard
// removes it without touching the workspace.
func TestBoothPlantedJournal(t *testing.T) {
	requireBooth(t)
	victim, victimState := victimFiles(t)
	before := victimState()
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a"), 0o644)
	const id = "tx-0000000000000001planted"
	plantJournal(t, ws, victim, id)
	want := "unauthenticated journal (earlier release or planted): not applied; jukebox booth discard " + id + " removes it"

	out, _, err := runBoothCLI(t, "booth", "status", "-C", ws)
	if err != nil || !strings.Contains(out, id) || !strings.Contains(out, want) {
		t.Fatalf("status: %q %v", out, err)
	}
	out, _, err = runBoothCLI(t, "booth", "status", "-C", ws, "--json")
	if err != nil || !strings.Contains(out, `"untrusted": "unauthenticated journal`) {
		t.Fatalf("status --json: %q %v", out, err)
	}
	if _, _, err := runBoothCLI(t, "booth", "diff", "-C", ws); err == nil {
		t.Fatal("diff of a planted transaction succeeded")
	}
	if victimState() != before {
		t.Fatalf("a read-only command applied the planted journal:\n%s", victimState())
	}
	// The commands that change state recover first: they say what they
	// leave alone, and apply none of it.
	out, errOut, err := runBoothCLI(t, "booth", "recover", "-C", ws)
	if err != nil || !strings.Contains(errOut, want) {
		t.Fatalf("recover: %q %q %v", out, errOut, err)
	}
	if _, errOut, _ = runBoothCLI(t, "booth", "rollback", "-C", ws); !strings.Contains(errOut, want) {
		t.Fatalf("rollback: %q", errOut)
	}
	if victimState() != before {
		t.Fatalf("recovery applied the planted journal:\n%s", victimState())
	}
	if _, err := os.Stat(filepath.Join(ws, ".jukebox", "booth", ".lock")); !os.IsNotExist(err) {
		t.Fatalf(".lock left behind: %v", err)
	}

	out, _, err = runBoothCLI(t, "booth", "discard", "-C", ws, id)
	if err != nil || !strings.Contains(out, "discarded "+id) {
		t.Fatalf("discard: %q %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(ws, ".jukebox")); !os.IsNotExist(err) {
		t.Fatalf("state left after discard: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "a" || victimState() != before {
		t.Fatal("discard touched files")
	}
	if out, _, err = runBoothCLI(t, "booth", "status", "-C", ws); err != nil || out != "no open booth transactions\n" {
		t.Fatalf("status after discard: %q %v", out, err)
	}

	// --all removes every untrusted one, and only those.
	plantJournal(t, ws, victim, id)
	plantJournal(t, ws, victim, "tx-0000000000000002planted")
	tx, err := sandbox.Begin(ws, sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, _, err = runBoothCLI(t, "booth", "discard", "-C", ws, "--all")
	if err != nil || strings.Count(out, "discarded ") != 2 {
		t.Fatalf("discard --all: %q %v", out, err)
	}
	if infos, _ := sandbox.List(ws, sandbox.Options{}); len(infos) != 1 || infos[0].ID != tx.ID() {
		t.Fatalf("after discard --all: %+v", infos)
	}
	if _, _, err := runBoothCLI(t, "booth", "discard", "-C", ws); err == nil {
		t.Fatal("discard with neither an id nor --all succeeded")
	}
	tx.Rollback(t.Context())
}
