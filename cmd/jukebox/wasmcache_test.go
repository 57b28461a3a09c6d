package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/sandbox"
)

// TestWasmCompiledOnce: `jukebox booth exec` keeps the tool's compiled
// code in the user's cache folder, under the version of wazero built in
// (a module another version compiled never loads), so the next process
// runs it without compiling; JUKEBOX_NO_CACHE keeps nothing there.
func TestWasmCompiledOnce(t *testing.T) {
	requireBooth(t)
	bin := filepath.Join(testenv.Binaries(t), "jukebox")
	wasm, err := filepath.Abs(filepath.Join("..", "..", "sandbox", "testdata", "wasmtool.wasm"))
	must(t, err)
	want := "wazero-" + goModVersion(t, "github.com/tetratelabs/wazero") + "-"
	for _, noCache := range []bool{false, true} {
		ws, cache := t.TempDir(), t.TempDir()
		must(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("from a"), 0o644))
		tx, err := sandbox.Begin(ws, sandbox.Options{})
		must(t, err)
		tx.Release() // as a run that ended with it kept
		// Twice with the cache (the second finds it); once without (what
		// is asked is that nothing is kept: a second run compiles again,
		// a second of CPU).
		runs := 2
		if noCache {
			runs = 1
		}
		for run := 0; run < runs; run++ {
			cmd := exec.Command(bin, "booth", "exec", "-C", ws, wasm, "cat", "a.txt")
			cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache, "HOME="+cache, "JUKEBOX_WASM_CACHE_DIR=")
			if noCache {
				cmd.Env = append(cmd.Env, "JUKEBOX_NO_CACHE=1")
			}
			out, err := cmd.Output()
			if err != nil || string(out) != "from a" {
				t.Fatalf("booth exec (no cache %v, run %d): %q, %v", noCache, run, out, err)
			}
		}
		tx.Rollback(t.Context())
		got, _ := os.ReadDir(filepath.Join(cache, "jukebox", "wasm"))
		switch {
		case noCache && len(got) != 0:
			t.Errorf("JUKEBOX_NO_CACHE: the cache folder holds %d entries", len(got))
		case !noCache && (len(got) != 1 || !strings.HasPrefix(got[0].Name(), want)):
			t.Errorf("cache folder holds %v, want one folder %s...", got, want)
		case !noCache:
			files, _ := os.ReadDir(filepath.Join(cache, "jukebox", "wasm", got[0].Name()))
			if len(files) == 0 {
				t.Errorf("%s is empty: nothing compiled was kept", got[0].Name())
			}
		}
	}
}

// goModVersion is the version go.mod requires of module.
func goModVersion(t *testing.T, module string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "go.mod"))
	must(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == module {
			return f[1]
		}
	}
	t.Fatalf("go.mod does not require %s", module)
	return ""
}
