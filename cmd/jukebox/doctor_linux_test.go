package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/sandbox"
)

// TestDoctorNetNone: where the overlay booth works, doctor's probe of
// --net none works too (it reused the overlay's work folder, which the
// first mount had marked, and said "--net none no").
func TestDoctorNetNone(t *testing.T) {
	requireConfinedBooth(t)
	out, _ := wantCode(t, ExitOK, "doctor", "--json", "--dir", t.TempDir())
	var caps sandbox.Capabilities
	must(t, json.Unmarshal([]byte(out), &caps))
	if !caps.Overlay || !caps.NetNone {
		t.Errorf("doctor: overlay %v, --net none %v, want both (notes %q)", caps.Overlay, caps.NetNone, caps.Notes)
	}
}

// TestDoctorAsUserInUnwritableFolder: doctor run by an ordinary user in a
// folder that user cannot write reports the namespaces that user gets (it
// probed in that folder, failed to write it, and said "user namespaces
// no").
func TestDoctorAsUserInUnwritableFolder(t *testing.T) {
	if os.Getuid() != 0 {
		testenv.Unavailable(t, "root, to run doctor as nobody", "run the tests as root")
	}
	requireConfinedBooth(t)
	base, bin := nobodyBinary(t, 0o755)
	writable, locked := filepath.Join(base, "w"), filepath.Join(base, "locked")
	must(t, os.Mkdir(writable, 0o777))
	must(t, os.Chmod(writable, 0o777))
	must(t, os.Mkdir(locked, 0o755))
	doctor := func(dir string) sandbox.Capabilities {
		cmd := exec.Command(bin, "doctor", "--json")
		asNobody(cmd, writable)
		cmd.Dir = dir
		out, err := cmd.Output()
		var caps sandbox.Capabilities
		if err != nil || json.Unmarshal(out, &caps) != nil {
			t.Fatalf("doctor as nobody in %s: %v\n%s", dir, err, out)
		}
		return caps
	}
	want, got := doctor(writable), doctor(locked)
	if !want.UserNamespaces {
		testenv.Unavailable(t, fmt.Sprintf("user namespaces for nobody, refused here (%q)", want.Notes), "run on Linux with unprivileged user namespaces allowed")
	}
	if got.UserNamespaces != want.UserNamespaces || got.Overlay != want.Overlay || got.NetNone != want.NetNone || got.Confined != want.Confined {
		t.Errorf("doctor as nobody in a folder it cannot write: %+v; in one it can: %+v", got, want)
	}
}

// nobodyBinary copies this test binary into a new folder of the given
// mode that nobody can reach (the test binary's own folder is private to
// root), for a test that runs it as nobody; it returns both.
func nobodyBinary(t *testing.T, mode os.FileMode) (base, bin string) {
	t.Helper()
	base = t.TempDir()
	must(t, os.Chmod(filepath.Dir(base), 0o755))
	must(t, os.Chmod(base, mode))
	bin = filepath.Join(base, "jukebox.test")
	testenv.SelfAt(t, bin)
	return base, bin
}

// asNobody makes cmd, the test binary, run as jukebox's main, as nobody,
// with its state (the booth's key) under state.
func asNobody(cmd *exec.Cmd, state string) {
	cmd.Env = append(os.Environ(), mainEnv+"=1", "TMPDIR=", "XDG_STATE_HOME="+state, "HOME="+state)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}
