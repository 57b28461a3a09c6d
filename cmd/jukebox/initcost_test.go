package main

import (
	"strconv"
	"strings"
	"testing"
)

// maxInitBytes bounds what any package of this module may allocate while
// it initialises: a table parsed, a template or a batch of regexps
// compiled at init is paid by every command, jukebox --version included.
// Such work goes behind a sync.OnceValue used by the commands that need it.
const maxInitBytes = 64 << 10

// TestInitIsLight runs jukebox --version (this test binary as jukebox)
// under GODEBUG=inittrace=1 and fails for a package of this module whose
// initialisation allocates more than maxInitBytes. Allocation is counted,
// not time: it is the same on every run and every machine.
func TestInitIsLight(t *testing.T) {
	cmd := jukeboxCmd(t.Context(), t.TempDir(), "--version")
	cmd.Env = append(cmd.Env, "GODEBUG=inittrace=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("jukebox --version: %v\n%s", err, stderr.String())
	}
	seen := 0
	for _, line := range strings.Split(stderr.String(), "\n") {
		// init PKG @T ms, C ms clock, B bytes, A allocs
		f := strings.Fields(line)
		if len(f) < 10 || f[0] != "init" || !strings.HasPrefix(f[1], "github.com/jukebox-os/jukebox/") {
			continue
		}
		seen++
		if b, err := strconv.Atoi(f[7]); err != nil || b > maxInitBytes {
			t.Errorf("%s allocates %s bytes at init (at most %d): make it lazy\n%s", f[1], f[7], maxInitBytes, line)
		}
	}
	if seen == 0 {
		t.Fatalf("GODEBUG=inittrace=1 reported no package of this module:\n%s", stderr.String())
	}
}

// TestVersionShortcut: `jukebox --version`, answered before the command
// line model is built, prints what kong's --version flag prints anywhere
// else on the command line.
func TestVersionShortcut(t *testing.T) {
	short, _ := wantCode(t, 0, "--version")
	viaKong, _ := wantCode(t, 0, "ls", "--version")
	if short != viaKong || short != version+"\n" {
		t.Errorf("jukebox --version printed %q, jukebox ls --version %q; want both %q", short, viaKong, version+"\n")
	}
}
