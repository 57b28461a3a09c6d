//go:build linux

package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// nestedRun is what a booth run inside a booth saw, for one mode.
type nestedRun struct {
	Mode      Mode   `json:"mode"`
	Err       string `json:"err,omitempty"`
	CannotRun bool   `json:"cannot_confine"` // errors.Is(err, ErrCannotConfine)
	Out       string `json:"out"`            // the notice and the agent's output, in order
	Confined  bool   `json:"confined"`
}

// nestedChild is TestMain's hook: run inside a booth, where user
// namespaces are refused (the booth's seccomp filter), it runs an agent
// in each mode and prints what came of it.
func nestedChild() {
	ws := os.Getenv("SANDBOX_NESTED_WS")
	if ws == "" {
		return
	}
	var runs []nestedRun
	for _, m := range []Mode{ModeAuto, ModeOverlay, ModeCopy} {
		r := nestedRun{Mode: m}
		tx, err := Begin(ws, Options{})
		if err == nil {
			var out bytes.Buffer
			var res ExecResult
			res, err = Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", "echo AGENT-RAN"}, Stdout: &out, Stderr: &out, Notice: &out, Mode: m})
			r.Out, r.Confined = out.String(), res.Confined
			tx.Rollback(ctx)
		}
		if err != nil {
			r.Err, r.CannotRun = err.Error(), errors.Is(err, ErrCannotConfine)
		}
		runs = append(runs, r)
	}
	json.NewEncoder(os.Stdout).Encode(runs)
	os.Exit(0)
}

// TestAutoFailsClosed: where user namespaces are refused (here: a booth
// inside a booth, as Docker's seccomp profile or Ubuntu's AppArmor userns
// restriction would), auto and overlay refuse to start the agent, with
// ErrCannotConfine; copy mode, asked for by name, runs it and says it is
// not confined before the agent's first word. (auto ran the agent in a
// copy, and said so after it had finished.)
func TestAutoFailsClosed(t *testing.T) {
	requireOverlay(t)
	outer := t.TempDir()
	bin := filepath.Join(outer, "sandbox.test") // the build folder is in the host's /tmp
	testenv.SelfAt(t, bin)
	inner := filepath.Join(outer, "inner")
	mkTree(t, inner, map[string]string{"a.txt": "a"})
	must(t, os.Mkdir(filepath.Join(outer, "state"), 0o700))
	tx, err := Begin(outer, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	var out, errs bytes.Buffer
	env := append(os.Environ(), "SANDBOX_NESTED_WS="+inner, "XDG_STATE_HOME="+filepath.Join(outer, "state"))
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{bin, "-test.run=^$"}, Env: env, Stdout: &out, Stderr: &errs,
		Notice: io.Discard, Mode: ModeOverlay})
	must(t, err)
	var runs []nestedRun
	if res.ExitCode != 0 || json.Unmarshal(out.Bytes(), &runs) != nil || len(runs) != 3 {
		t.Fatalf("the nested run: exit %d\n%s\n%s", res.ExitCode, out.String(), errs.String())
	}
	for _, r := range runs[:2] {
		if !r.CannotRun || strings.Contains(r.Out, "AGENT-RAN") || r.Confined {
			t.Errorf("%s where the booth cannot confine: err %q, output %q; want ErrCannotConfine and no agent", r.Mode, r.Err, r.Out)
		}
	}
	c := runs[2]
	notice := strings.Index(c.Out, "NOT confined")
	if c.Err != "" || notice < 0 || notice > strings.Index(c.Out, "AGENT-RAN") || c.Confined {
		t.Errorf("copy mode: err %q, output %q; want the agent run, after a notice that it is NOT confined", c.Err, c.Out)
	}
}
