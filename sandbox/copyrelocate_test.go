//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestCopyVenvWorksAfterCommit: a venv made in a copy-mode booth runs at
// the real path after commit: its scripts' shebangs, pyvenv.cfg and
// activate scripts named the copy's folder, which is gone. (Compiled
// .pyc files hold it too, as their source's name in tracebacks: binary,
// so listed, not rewritten.) The venv is made without pip (whose install
// cost 11 s of CPU here); its script is written as pip writes a console
// script: the venv's interpreter by absolute path on the shebang line.
func TestCopyVenvWorksAfterCommit(t *testing.T) {
	py := testenv.RequirePython(t)
	ws := filepath.Join(t.TempDir(), "ws")
	mkTree(t, ws, map[string]string{"a.txt": "a"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	copyExec(t, tx, `set -e
"$PY" -m venv --without-pip venv
printf '#!%s/venv/bin/python\nimport sys\nprint(sys.prefix)\n' "$(pwd -P)" > venv/bin/tool
chmod +x venv/bin/tool
venv/bin/tool >/dev/null
. venv/bin/activate && test "$VIRTUAL_ENV" = "$(pwd -P)/venv"`, "PY="+py)
	_, err = tx.Commit(ctx)
	must(t, err)
	out, err := exec.Command(filepath.Join(ws, "venv/bin/tool")).CombinedOutput()
	if err != nil {
		t.Fatalf("the committed venv's script does not run: %v: %s", err, out)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(ws, "venv"))
	must(t, err)
	if got := strings.TrimSpace(string(out)); got != real {
		t.Errorf("the committed venv's interpreter has the prefix %q, want %q", got, real)
	}
	act, err := exec.Command("sh", "-c", `. "$1/bin/activate" && printf %s "$VIRTUAL_ENV"`, "sh", filepath.Join(ws, "venv")).CombinedOutput()
	if err != nil || string(act) != filepath.Join(ws, "venv") && string(act) != real {
		t.Errorf("the committed venv's activate sets VIRTUAL_ENV=%q (%v), want %q", act, err, real)
	}
	for p, content := range readTree(t, filepath.Join(ws, "venv")) {
		if strings.Contains(content, copyPrefix) && !strings.Contains(content, "\x00") {
			t.Errorf("venv/%s (text) still names the copy's folder", p)
		}
	}
}

// TestCopyRewritesOnlyItsRoot: the copy's root path is rewritten only
// where it is whole (followed by "/" or the end of the name), only in
// files the agent wrote, and a binary file that holds it is listed, not
// changed.
func TestCopyRewritesOnlyItsRoot(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	mkTree(t, ws, map[string]string{"old.txt": "untouched"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	var notice bytes.Buffer
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", `set -e
r=$(pwd -P)
printf '#!%s/bin/tool\nroot=%s\nother=%s2/x\n' "$r" "$r" "$r" > text.sh
printf 'bin\000%s/lib\n' "$r" > blob.bin
ln -s "$r/text.sh" link`}, Mode: ModeCopy, Notice: &notice, Stderr: &notice})
	must(t, err)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, notice.String())
	}
	_, err = tx.Commit(ctx)
	must(t, err)
	real, err := filepath.EvalSymlinks(ws)
	must(t, err)
	got := readTree(t, ws)
	if want := "#!" + real + "/bin/tool\nroot=" + real + "\n"; !strings.HasPrefix(got["text.sh"], want) {
		t.Errorf("text.sh = %q, want it to begin %q", got["text.sh"], want)
	}
	if !strings.Contains(got["text.sh"], copyPrefix) {
		t.Errorf("text.sh: a longer name that begins with the copy's root was rewritten: %q", got["text.sh"])
	}
	if !strings.Contains(got["blob.bin"], copyPrefix) {
		t.Errorf("blob.bin (binary) was changed: %q", got["blob.bin"])
	}
	if strings.Join(res.CopyPaths, ",") != "blob.bin" || !strings.Contains(notice.String(), "blob.bin") {
		t.Errorf("CopyPaths = %q, notice %q: want blob.bin listed", res.CopyPaths, notice.String())
	}
	if target, _ := os.Readlink(filepath.Join(ws, "link")); target != real+"/text.sh" {
		t.Errorf("link -> %q, want %q", target, real+"/text.sh")
	}
}
