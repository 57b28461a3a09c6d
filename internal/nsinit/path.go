package nsinit

import (
	"os"
	"path/filepath"
	"sync/atomic"
)

// Helper is the init's own executable, installed beside jukebox; Self is
// this process's executable, which can be the init too.
const (
	Helper = "jukebox-booth"
	Self   = "/proc/self/exe"
)

// distrusted is set once a helper answered Mismatch: this process then
// starts itself.
var distrusted atomic.Bool

// Path is the executable a booth starts as its init: jukebox-booth in the
// folder of this process's executable (symbolic links resolved) when it
// is a regular executable file that only its owner may write, else this
// executable again, whose main must call MaybeRun first thing. A helper
// built from other source says so (Mismatch) before it does anything;
// Distrust then makes Path answer this executable for the rest of the
// process.
func Path() string {
	if distrusted.Load() {
		return Self
	}
	if p := chosen.Load(); p != nil {
		return *p
	}
	exe, err := os.Executable()
	if err != nil {
		return Self
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	p := filepath.Join(filepath.Dir(exe), Helper)
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 || fi.Mode().Perm()&0o022 != 0 {
		return Self
	}
	return p
}

// chosen, once set (Use), is the helper Path answers instead of the one
// beside this executable.
var chosen atomic.Pointer[string]

// Use makes Path answer helper, a jukebox-booth built from this source,
// instead of looking beside this executable: for test binaries, which
// would otherwise start themselves (a race-instrumented test binary takes
// up to a second to start; jukebox-booth a few milliseconds). Distrust
// still wins. "" goes back to looking beside this executable.
func Use(helper string) {
	if helper == "" {
		chosen.Store(nil)
		return
	}
	chosen.Store(&helper)
}

// Chosen is the helper Use chose, "" when none was: a test binary's
// stand-in for itself where a small executable of this source will do
// (the engine starts it as the agent's keeper too).
func Chosen() string {
	if p := chosen.Load(); p != nil {
		return *p
	}
	return ""
}

// Distrust stops Path from answering the helper (see Mismatch).
func Distrust() { distrusted.Store(true) }
