package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestNoCacheKeepsNoRoots: --no-cache is JUKEBOX_NO_CACHE for what reads
// the variable (the kept roots of the CA bundle, compiled WASI tools):
// a run with it keeps no roots in the cache folder, one without keeps
// them, and the variable is the user's again after the command.
func TestNoCacheKeepsNoRoots(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("JUKEBOX_NO_CACHE", "") // restored at the end
	os.Unsetenv("JUKEBOX_NO_CACHE")
	t.Chdir(t.TempDir())
	roots := filepath.Join(cache, "jukebox", "roots")
	wantCode(t, ExitOK, "--no-cache", "record", "-o", "a.jbx", "--", "true")
	if entries, err := os.ReadDir(roots); err == nil {
		t.Errorf("--no-cache: %d bundles kept in %s", len(entries), roots)
	}
	if v, ok := os.LookupEnv("JUKEBOX_NO_CACHE"); ok {
		t.Errorf("after --no-cache, JUKEBOX_NO_CACHE=%q is left set", v)
	}
	wantCode(t, ExitOK, "record", "-o", "b.jbx", "--", "true")
	if entries, err := os.ReadDir(roots); err != nil || len(entries) != 1 {
		t.Errorf("without --no-cache: %d bundles kept in %s (%v), want 1", len(entries), roots, err)
	}
}
