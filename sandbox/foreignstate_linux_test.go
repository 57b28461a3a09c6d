package sandbox

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestForeignStateRefused: a folder of the workspace is a workspace of
// its own with a booth transaction kept there (`record --booth --keep`),
// whose staged files a later `booth commit` there applies. A run in the
// outer workspace that changes them (seen: an agent rewrote the staged
// a.txt, which booth commit then applied, unreviewed) or changes that
// state at all is refused there, whether it staged through the view, an
// overlay run or a copy run, and nothing of it is in the change set;
// the rest of the run's changes are.
func TestForeignStateRefused(t *testing.T) {
	const staged = "sub/.jukebox/booth/tx-1/upper/a.txt"
	runs := map[string]func(t *testing.T, tx *Tx){
		"view": func(t *testing.T, tx *Tx) {
			// Refused as it is staged (ErrForeignState): staged, it was
			// accepted and then left out of the commit.
			for _, p := range []string{staged, "sub/.jukebox/booth/tx-1/planted"} {
				if err := tx.Files().WriteFile(p, []byte("EVIL"), 0o644); !errors.Is(err, ErrForeignState) {
					t.Errorf("write %s through the view: %v, want ErrForeignState", p, err)
				}
			}
			if err := tx.Files().RemoveAll("sub/.jukebox"); !errors.Is(err, ErrForeignState) {
				t.Errorf("remove sub/.jukebox through the view: %v, want ErrForeignState", err)
			}
			must(t, tx.Files().WriteFile("ok.txt", []byte("ok"), 0o644))
		},
		"copy": func(t *testing.T, tx *Tx) {
			copyExec(t, tx, "echo EVIL > "+staged+"; echo ok > ok.txt")
		},
		"copy, state removed": func(t *testing.T, tx *Tx) {
			copyExec(t, tx, "rm -r sub/.jukebox; echo ok > ok.txt")
		},
		"overlay": func(t *testing.T, tx *Tx) {
			requireOverlay(t)
			var out bytes.Buffer
			res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", "echo EVIL > " + staged + " && mkdir -p deep/.jukebox/booth && echo ok > ok.txt"},
				Stdout: &out, Stderr: &out, Mode: ModeOverlay, Notice: &bytes.Buffer{}})
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("exec: %v, exit %d: %s", err, res.ExitCode, out.String())
			}
		},
	}
	for name, run := range runs {
		t.Run(name, func(t *testing.T) {
			ws := t.TempDir()
			mkTree(t, ws, map[string]string{"sub/a.txt": "orig", staged: "benign", "sub/.jukebox/booth/tx-1/tx.json": "{}"})
			state := filepath.Join(ws, "sub", ".jukebox") // readTree leaves a .jukebox at its top out
			before, beforeState := readTree(t, filepath.Join(ws, "sub")), readTree(t, state)
			tx, err := Begin(ws, Options{})
			must(t, err)
			defer tx.Rollback(ctx)
			run(t, tx)
			cs, err := tx.Diff()
			must(t, err)
			want := "jukebox-state sub/.jukebox"
			switch name {
			case "overlay":
				want = "jukebox-state deep/.jukebox\n" + want
			case "view":
				want = "" // nothing was staged there
			}
			if got := refusals(cs); got != want {
				t.Errorf("refused:\n%s\nwant:\n%s", got, want)
			}
			var changed []string
			for _, c := range cs.Changes {
				if strings.Contains(c.Path, ".jukebox") {
					t.Errorf("%s %s is in the change set", c.Op, c.Path)
				}
				changed = append(changed, c.Path)
			}
			if !strings.Contains(strings.Join(changed, " "), "ok.txt") {
				t.Errorf("changes %v: ok.txt is missing", changed)
			}
			if len(cs.Refused) > 0 && !strings.Contains(cs.Refused[len(cs.Refused)-1].Reason, "another workspace's jukebox state") {
				t.Errorf("reason: %q", cs.Refused[len(cs.Refused)-1].Reason)
			}
			if _, err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if after, afterState := readTree(t, filepath.Join(ws, "sub")), readTree(t, state); !maps.Equal(before, after) || !maps.Equal(beforeState, afterState) {
				t.Errorf("the kept transaction's workspace and state changed: %v %v, were %v %v", after, afterState, before, beforeState)
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "ok.txt")); string(b) != "ok\n" && string(b) != "ok" {
				t.Errorf("ok.txt committed as %q", b)
			}
		})
	}
}
