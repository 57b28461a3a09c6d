package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestExecViewIsTheChilds: what is written through ExecOptions.View while
// the child runs is in the child's view at once (the child waits for it),
// staged with what the child wrote, and not in the real workspace; a link
// the child planted does not lead the view's writes out of the workspace;
// the view is withdrawn (View(nil)) before Exec returns.
func TestExecViewIsTheChilds(t *testing.T) {
	for _, mode := range []Mode{ModeOverlay, ModeCopy} {
		t.Run(string(mode), func(t *testing.T) {
			if mode == ModeOverlay {
				if caps := Probe(ctx, t.TempDir()); !caps.Overlay {
					testenv.Unavailable(t, fmt.Sprintf("overlayfs in an unprivileged user namespace, refused here (%v)", caps.Notes),
						"run on Linux with unprivileged user namespaces allowed")
				}
			}
			ws := t.TempDir()
			outside := t.TempDir()
			must(t, os.WriteFile(filepath.Join(ws, "kept.txt"), []byte("as it was\n"), 0o644))
			tx, err := Begin(ws, Options{})
			must(t, err)
			defer tx.Rollback(ctx)
			// The child plants a link out, says so, waits for the view's
			// file and copies it.
			script := fmt.Sprintf(`ln -s %s out && : > planted && while [ ! -e from-view.txt ]; do sleep 0.01; done; cat from-view.txt > seen.txt`, outside)
			var errs []error
			given, withdrawn := 0, 0
			var stdout bytes.Buffer
			_, err = Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", script}, Mode: mode, Stdout: &stdout, Stderr: &stdout, Notice: &bytes.Buffer{},
				View: func(v *os.Root) {
					if v == nil {
						withdrawn++
						return
					}
					given++
					for {
						if _, err := v.Lstat("planted"); err == nil {
							break
						}
					}
					// Out through the child's link: refused.
					errs = append(errs, v.WriteFile("out/escaped.txt", []byte("x"), 0o644))
					must(t, v.WriteFile("from-view.txt", []byte("written through the view\n"), 0o644))
				}})
			must(t, err)
			if given != 1 || withdrawn != 1 {
				t.Fatalf("View given %d times, withdrawn %d, want once each", given, withdrawn)
			}
			if len(errs) != 1 || errs[0] == nil {
				t.Fatalf("a write through the child's link out was not refused: %v", errs)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Fatalf("the view wrote outside the workspace: %v", ents)
			}
			if _, err := os.Stat(filepath.Join(ws, "from-view.txt")); !os.IsNotExist(err) {
				t.Fatalf("the view's file reached the real workspace before a commit: %v", err)
			}
			files := tx.Files()
			got, err := files.ReadFile("seen.txt")
			if err != nil || string(got) != "written through the view\n" {
				t.Fatalf("the child saw %q (%v), want the view's file (output: %s)", got, err, stdout.String())
			}
			cs, err := tx.Diff()
			must(t, err)
			if d := ops(cs); !strings.Contains(d, "write from-view.txt") || !strings.Contains(d, "write seen.txt") {
				t.Fatalf("staged:\n%s\nwant the view's write and the child's", d)
			}
		})
	}
}
