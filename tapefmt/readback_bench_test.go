package tapefmt_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/internal/tapegen"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// BenchmarkRecord50Steps writes the 50-step run as a recording does (every
// request and response body a blob, deltas across steps) and closes it,
// with the read-back checks (each blob decoded as it is encoded, the quick
// check at close) and without, in one run. Target: under 5% apart; the
// checks cost less still against a whole recording, which also waits on
// the model and the agent.
func BenchmarkRecord50Steps(b *testing.B) {
	for _, check := range []bool{false, true} {
		name := map[bool]string{false: "unchecked", true: "checked"}[check]
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			path := filepath.Join(dir, "run.jbx")
			for b.Loop() {
				os.Remove(path)
				opts, _ := tapegen.Options()
				opts.Sync = tapefmt.SyncNever // time the checks, not the disk
				if !check {
					opts = tapefmt.WithoutBlobReadBack(opts)
				}
				w, err := tapefmt.Create(path, opts)
				if err != nil {
					b.Fatal(err)
				}
				if err := errors.Join(tapegen.Write(w, spec50), w.Close()); err != nil {
					b.Fatal(err)
				}
				if check {
					if err := tapefmt.ReadBack(path, nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			tapetest.Verify(b, path)
		})
	}
}
