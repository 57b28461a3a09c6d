//go:build unix

package engine_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/nsinit"
)

// TestKeeperFromOtherSource: a jukebox-booth beside jukebox that is not
// of this source (it reports keeper.Mismatch, or is from before the
// keeper and exits without a word) starts nothing, and jukebox keeps the
// agent itself: the agent runs once, and its exit status is the run's.
func TestKeeperFromOtherSource(t *testing.T) {
	prev := nsinit.Chosen()
	t.Cleanup(func() { nsinit.Use(prev) })
	for name, script := range map[string]string{
		"mismatch":   "#!/bin/sh\necho mismatch >&4\nexit 124\n",
		"old helper": "#!/bin/sh\necho 'jukebox-booth: nothing to do' >&2\nexit 2\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			helper := filepath.Join(dir, "jukebox-booth")
			if err := os.WriteFile(helper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			nsinit.Use(helper)
			count := filepath.Join(dir, "runs")
			o := engine.RunOptions{Argv: []string{"sh", "-c", "echo ran >> " + count + "; exit 3"}, Dir: dir,
				Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
			res, err := engine.Record(context.Background(), engine.RecordOptions{RunOptions: o, Tape: filepath.Join(dir, "run.jbx")})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(count)
			if got := strings.Count(string(b), "ran"); got != 1 || res.End.ExitCode != 3 {
				t.Errorf("the agent ran %d times and exited %d; want once, 3", got, res.End.ExitCode)
			}
		})
	}
}
