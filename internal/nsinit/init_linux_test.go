package nsinit

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	MaybeRun()
	os.Exit(m.Run())
}

// TestMismatchBeforeAnything: an init built from other source than its
// caller (an older jukebox-booth left beside a newer jukebox) exits with
// Mismatch, saying so, before it makes a namespace's mount or runs the
// command; the caller then starts itself.
func TestMismatchBeforeAnything(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		build string
		code  int
		msg   string
	}{
		{"an older build", Mismatch, "setup: this init was built from other source than jukebox"},
		{"", Mismatch, "setup: this init was built from other source than jukebox"},
	} {
		spec := Spec{Lower: dir, Upper: dir, Work: dir, Dir: dir, Args: []string{"touch", dir + "/ran"}, Build: c.build}
		raw, err := json.Marshal(spec)
		must(t, err)
		r, w, err := os.Pipe()
		must(t, err)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), Env+"="+string(raw))
		cmd.ExtraFiles = []*os.File{w}
		must(t, cmd.Start())
		w.Close()
		msg, _ := io.ReadAll(r)
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != c.code {
			t.Errorf("build %q: exit %v, want %d", c.build, err, c.code)
		}
		if string(msg) != c.msg {
			t.Errorf("build %q: said %q, want %q", c.build, msg, c.msg)
		}
		if _, err := os.Stat(dir + "/ran"); err == nil {
			t.Fatalf("build %q: the command ran", c.build)
		}
	}
	if f := Fingerprint(); len(f) != 64 || strings.Trim(f, "0123456789abcdef") != "" || f != Fingerprint() {
		t.Errorf("Fingerprint() = %q", f)
	}
}
