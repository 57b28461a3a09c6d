//go:build linux

package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// nobodyRun is what the child of TestChmod000AsUser reports.
type nobodyRun struct {
	Refused []Refusal
	Err     string
	Steps   string // SANDBOX_NOBODY_MODE=steps: what Steps.Next saw
	Out     string // SANDBOX_NOBODY_MODE=hosttmp: the agent's output
}

// nobodyChild is the child side of TestChmod000AsUser, run as an
// ordinary user: an agent makes a file of its own mode 000 (a real one
// and a new one) in a workspace that holds one already, the change set
// is read and committed. TestMain calls
// it; it returns at once in any other process.
func nobodyChild() {
	ws := os.Getenv("SANDBOX_NOBODY_WS")
	if ws == "" {
		return
	}
	var run nobodyRun
	err := func() error {
		tx, err := Begin(ws, Options{})
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		switch os.Getenv("SANDBOX_NOBODY_MODE") {
		case "steps":
			return nobodySteps(tx, &run)
		case "hosttmp":
			return nobodyHostTmp(tx, &run)
		case "caller":
			return nobodyCaller(tx, &run)
		}
		if mode := Mode(os.Getenv("SANDBOX_NOBODY_MODE")); mode == "files" {
			if err := tx.Files().Chmod("f", 0); err != nil {
				return err
			}
			if err := tx.Files().WriteFile("new", []byte("n\n"), 0); err != nil {
				return err
			}
		} else {
			var out bytes.Buffer
			res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", `set -e; chmod 000 f; echo n > new; chmod 000 new`},
				Mode: mode, Stdout: &out, Stderr: &out, Notice: &bytes.Buffer{}})
			if err == nil && res.ExitCode != 0 {
				return &exec.ExitError{}
			}
			if err != nil {
				return err
			}
		}
		cs, err := tx.Diff()
		if err != nil {
			return err
		}
		if run.Refused = cs.Refused; len(cs.Refused) > 0 {
			return nil
		}
		_, err = tx.Commit(ctx)
		return err
	}()
	if err != nil {
		run.Err = err.Error()
	}
	json.NewEncoder(os.Stdout).Encode(run)
	os.Exit(0)
}

// TestChmod000AsUser: as an ordinary user, a file the agent made mode
// 000 (chmod 000 of a real file, or a new one) commits like any other:
// the booth reads its own staged copy, not refusing it as unreadable,
// and a real file of mode 000 does not keep the copy fallback from
// starting.
func TestChmod000AsUser(t *testing.T) {
	if os.Getuid() != 0 {
		testenv.Unavailable(t, "root, to run the booth as the user nobody", "run the tests as root")
	}
	for _, mode := range []string{"files", string(ModeCopy), string(ModeOverlay)} {
		t.Run(mode, func(t *testing.T) { chmod000AsNobody(t, mode) })
	}
}

func chmod000AsNobody(t *testing.T, mode string) {
	run, ws := runAsNobody(t, mode)
	if run.Err != "" || len(run.Refused) > 0 {
		t.Fatalf("as nobody: err %q, refused %+v", run.Err, run.Refused)
	}
	for name, want := range map[string]string{"f": "f\n", "new": "n\n", "locked": "l\n"} {
		b, err := os.ReadFile(filepath.Join(ws, name))
		fi, serr := os.Stat(filepath.Join(ws, name))
		if err != nil || serr != nil || string(b) != want || fi.Mode().Perm() != 0 {
			t.Errorf("%s after commit: %q (%v), mode %v (%v); want %q, mode 000", name, b, err, fi.Mode(), serr, want)
		}
	}
}

// nobodyTmp is the folder of the host's /tmp that TestHostTmpSharedAsUser
// gives the child, root's.
var nobodyTmp string

// runAsNobody starts this test binary as nobody over a workspace of its
// own (f, and locked of mode 000) and reads what its child reports.
func runAsNobody(t *testing.T, mode string) (nobodyRun, string) {
	base := t.TempDir()
	must(t, os.Chmod(filepath.Dir(base), 0o755))
	must(t, os.Chmod(base, 0o755))
	ws, state := filepath.Join(base, "ws"), filepath.Join(base, "state")
	mkTree(t, ws, map[string]string{"f": "f\n", "locked": "l\n"})
	must(t, os.MkdirAll(state, 0o700))
	bin := filepath.Join(base, "sandbox.test")
	testenv.SelfAt(t, bin)
	for _, d := range []string{ws, state} {
		must(t, filepath.Walk(d, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, 65534, 65534)
		}))
	}
	must(t, os.Chmod(filepath.Join(ws, "locked"), 0)) // a real file of mode 000: copied all the same
	if mode == "caller" {
		// root's own file, in a folder nobody may write: nobody may not write it.
		must(t, os.WriteFile(filepath.Join(ws, "roots"), []byte("r\n"), 0o644))
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), "SANDBOX_NOBODY_WS="+ws, "SANDBOX_NOBODY_MODE="+mode, "HOME="+base, "XDG_STATE_HOME="+state, "SANDBOX_NOBODY_TMP="+nobodyTmp)
	cmd.Dir = base
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	var run nobodyRun
	must(t, json.Unmarshal(out, &run))
	if (mode == string(ModeOverlay) || mode == "steps" || mode == "hosttmp") && strings.Contains(run.Err, "namespace overlay refused") {
		testenv.Unavailable(t, "the overlay booth for the user nobody ("+run.Err+")", "run on Linux with unprivileged user namespaces allowed")
	}
	return run, ws
}

// nobodySteps runs an agent in the overlay as nobody and reads the
// staging area at a step boundary while the transaction is open.
func nobodySteps(tx *Tx, run *nobodyRun) error {
	st := tx.Steps()
	var out bytes.Buffer
	if _, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", `set -e; echo a > a; echo g > f; rm locked`},
		Mode: ModeOverlay, Stdout: &out, Stderr: &out, Notice: &bytes.Buffer{}}); err != nil {
		return err
	}
	cs, err := st.Next()
	for _, c := range cs {
		run.Steps += string(c.Op) + " " + c.Path + "\n"
	}
	return err
}

// TestStepsAsUser: as an ordinary user, the booth reads its staging
// area at a step boundary as root's does.
func TestStepsAsUser(t *testing.T) {
	if os.Getuid() != 0 {
		testenv.Unavailable(t, "root, to run the booth as the user nobody", "run the tests as root")
	}
	run, _ := runAsNobody(t, "steps")
	if run.Err != "" || run.Steps != "write a\nwrite f\ndelete locked\n" {
		t.Fatalf("as nobody: err %q, step changes %q", run.Err, run.Steps)
	}
}

// nobodyHostTmp runs an agent in the overlay as nobody that writes in
// folders of the host's /tmp that root owns and everyone may write in.
func nobodyHostTmp(tx *Tx, run *nobodyRun) error {
	d := os.Getenv("SANDBOX_NOBODY_TMP")
	script := `set -e; D="$1"; echo a > "$D/open/new"; echo b > "$D/open/deeper/new2"; mkdir "$D/open/sub"; echo c > "$D/open/sub/x"
cat "$D/open/new" "$D/open/deeper/new2" "$D/open/sub/x" "$D/open/kept"; stat -c %a "$D/open/deeper"`
	var out bytes.Buffer
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", script, "sh", d},
		Mode: ModeOverlay, Stdout: &out, Stderr: &out, Notice: &bytes.Buffer{}})
	run.Out = out.String()
	if err == nil && res.ExitCode != 0 {
		return fmt.Errorf("the agent exited %d", res.ExitCode)
	}
	return err
}

// TestHostTmpSharedAsUser: as an ordinary user, the booth's /tmp takes
// new files in a folder of the host's /tmp that another user owns and
// lets everyone write in, as the host does (overlayfs could not copy such
// a folder up for a namespace that does not map its owner: the agent got
// EOVERFLOW, "Value too large for defined data type"); nothing of it
// reaches the host.
func TestHostTmpSharedAsUser(t *testing.T) {
	if os.Getuid() != 0 {
		testenv.Unavailable(t, "root, to run the booth as the user nobody", "run the tests as root")
	}
	d := hostTmpDir(t) // root's, 0755
	must(t, os.Mkdir(filepath.Join(d, "open"), 0o777))
	must(t, os.Chmod(filepath.Join(d, "open"), 0o777))
	must(t, os.Mkdir(filepath.Join(d, "open", "deeper"), 0o777))
	must(t, os.Chmod(filepath.Join(d, "open", "deeper"), os.ModeSticky|0o777))
	must(t, os.WriteFile(filepath.Join(d, "open", "kept"), []byte("host\n"), 0o644))
	nobodyTmp = d
	t.Cleanup(func() { nobodyTmp = "" })
	run, _ := runAsNobody(t, "hosttmp")
	if want := "a\nb\nc\nhost\n1777\n"; run.Err != "" || run.Out != want {
		t.Fatalf("as nobody: err %q, output %q, want %q", run.Err, run.Out, want)
	}
	for _, p := range []string{"open/new", "open/deeper/new2", "open/sub"} {
		if _, err := os.Lstat(filepath.Join(d, p)); err == nil {
			t.Errorf("%s was written on the host", p)
		}
	}
}

// nobodyCaller stages, as nobody, writes over root's file and over a
// read-only one of its own, each in a transaction held to what its
// caller may write (AsCaller): both commits are refused; a write to a
// file of its own commits.
func nobodyCaller(tx *Tx, run *nobodyRun) error {
	tx.AsCaller()
	if err := os.Chmod(filepath.Join(tx.Workspace(), "f"), 0o444); err != nil {
		return err
	}
	for _, name := range []string{"roots", "f"} {
		t, err := Begin(tx.Workspace(), Options{})
		if err != nil {
			return err
		}
		t.AsCaller()
		if err := t.Files().WriteFile(name, []byte("over\n"), 0o644); err != nil {
			t.Rollback(ctx)
			return err
		}
		_, err = t.Commit(ctx)
		run.Out += fmt.Sprintf("%s: %v; open %v\n", name, err, !t.Closed())
		if err := t.Rollback(ctx); err != nil {
			return err
		}
	}
	if err := tx.Files().WriteFile("new", []byte("mine\n"), 0o644); err != nil {
		return err
	}
	_, err := tx.Commit(ctx)
	return err
}

// TestCommitAsCallerAsUser: as an ordinary user, a transaction held to
// what its caller may write (an SDK's) does not rename a staged file over
// root's, nor over a read-only file: a plain write of either fails, and
// the commit replaced both (root's then owned by nobody).
func TestCommitAsCallerAsUser(t *testing.T) {
	if os.Getuid() != 0 {
		testenv.Unavailable(t, "root, to run as the user nobody", "run the tests as root")
	}
	run, ws := runAsNobody(t, "caller")
	if run.Err != "" {
		t.Fatalf("as nobody: %s", run.Err)
	}
	for _, name := range []string{"roots", "f"} {
		if !strings.Contains(run.Out, name+": commit \""+name+"\": permission denied; open true") {
			t.Errorf("%s: %q", name, run.Out)
		}
	}
	for name, want := range map[string]string{"roots": "r\n", "f": "f\n", "new": "mine\n"} {
		if b, err := os.ReadFile(filepath.Join(ws, name)); err != nil || string(b) != want {
			t.Errorf("%s after the commits: %q, %v; want %q", name, b, err, want)
		}
	}
}
