//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The tool is checked in so tests need no wasip1 toolchain build; this
// regenerates it:
//
//go:generate env GOOS=wasip1 GOARCH=wasm go build -trimpath -ldflags=-s\ -w -o testdata/wasmtool.wasm ./testdata/wasmtool

func buildTool(t *testing.T) []byte {
	t.Helper()
	bin, err := os.ReadFile(filepath.Join("testdata", "wasmtool.wasm"))
	must(t, err)
	return bin
}

func TestWasmToolRunsOnStagedView(t *testing.T) {
	bin := buildTool(t)
	ws := t.TempDir()
	mkTree(t, ws, sampleTree())
	before := treeHash(t, ws)
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	must(t, tx.Files().WriteFile("staged.txt", []byte("from the booth"), 0o644))
	run := func(args ...string) string {
		var out, errb bytes.Buffer
		code, err := RunWasm(ctx, tx.Files(), bin, WasmOptions{Args: append([]string{"wasmtool"}, args...), Stdout: &out, Stderr: &errb})
		if err != nil || code != 0 {
			t.Fatalf("%v: code %d err %v stderr %s", args, code, err, errb.String())
		}
		return out.String()
	}
	if got := run("cat", "staged.txt"); got != "from the booth" {
		t.Fatalf("cat staged: %q", got)
	}
	run("write", "src/main.go", "package main // wasm\n")
	run("rm", "old")
	run("mkdir", "made")
	run("write", "made/m.txt", "m")
	run("mv", "keep/c.txt", "moved.txt")
	if got := run("ls", "."); got != ".jukebox\nREADME.md\ndata\nkeep\nlink\nmade\nmoved.txt\nsrc\nstaged.txt\n" {
		t.Fatalf("ls: %q", got)
	}
	if got := run("cat", "link"); got != "package main // wasm\n" {
		t.Fatalf("cat through symlink: %q", got)
	}
	var errb bytes.Buffer
	code, _ := RunWasm(ctx, tx.Files(), bin, WasmOptions{Args: []string{"wasmtool", "cat", "../../etc/passwd"}, Stderr: &errb})
	if code == 0 {
		t.Fatal("wasm tool read outside the workspace")
	}
	if treeHash(t, ws) != before {
		t.Fatal("wasm tool changed the real workspace")
	}
	cs, err := tx.Diff()
	must(t, err)
	want := "delete keep/c.txt\nmkdir made\nwrite made/m.txt\nwrite moved.txt\ndelete old\n" +
		"delete old/a.txt (implied)\ndelete old/deep (implied)\ndelete old/deep/b.txt (implied)\n" +
		"write src/main.go\nwrite staged.txt"
	if got := ops(cs); got != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", got, want)
	}
	// Files and folders a tool makes get the modes a plain run would give
	// them, not wazero's fixed 0600 and 0700.
	for _, c := range cs.Changes {
		want := wasiFilePerm()
		if c.Path == "made" {
			want = wasiDirPerm()
		}
		if (c.Path == "made" || c.Path == "made/m.txt" || c.Path == "moved.txt") && c.Mode.Perm() != want {
			t.Errorf("%s: mode %v, want %v", c.Path, c.Mode.Perm(), want)
		}
	}
}
