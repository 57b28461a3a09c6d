package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/controlapi"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestWriteTooLargeToTapeIsRefused: a binary batch's write is taped as
// the request it stands for, its content a JSON string, in one blob. 44
// MiB of control characters take six bytes each there (264 MiB, over the
// 256 MiB of a blob): the write was staged and committed, its control
// frame left off the tape without a word (the recording said nothing,
// its replay diverged at the write and printed 264 MiB of diff). It is
// refused now when its turn in the batch comes (413, naming the file and
// the limit): nothing of it is staged, the operations before it are
// served and taped, none after it is served.
func TestWriteTooLargeToTapeIsRefused(t *testing.T) {
	if controlapi.MaxTapedBody != tapefmt.MaxBlobSize {
		t.Fatalf("controlapi.MaxTapedBody %d, tapefmt.MaxBlobSize %d: a write the API takes must fit a blob", controlapi.MaxTapedBody, tapefmt.MaxBlobSize)
	}
	ctx := context.Background()
	ws, tape := t.TempDir(), filepath.Join(t.TempDir(), "big.jbx")
	c, stop := serveRun(t, ws, tape)
	begun, err := c.Begin(ctx, controlapi.Begin{Name: "big"})
	if err != nil {
		t.Fatal(err)
	}
	// A small write, the large one, a delete: the first is served, the
	// second refused, the third not served.
	big := bytes.Repeat([]byte{1}, 44<<20)
	head := fmt.Appendf(nil, `{"ops":[{"op":"write","body":{"path":"small.txt"},"content":4},`+
		`{"op":"write","body":{"path":"big.txt"},"content":%d},{"op":"delete","body":{"path":"small.txt"}}]}`+"\n", len(big))
	status, out := postBatch(t, c, begun.Tx, controlapi.BatchContentType, slices.Concat(head, []byte("a\x01b\n"), big))
	if status != 200 || len(out.Answers) != 2 || out.Answers[0].Status != 200 || out.Answers[1].Status != 413 ||
		!strings.Contains(string(out.Answers[1].Body), "big.txt") || !strings.Contains(string(out.Answers[1].Body), "over the 256 MiB") {
		t.Errorf("a batch of a small write, one whose taped form is 264 MiB and a delete: HTTP %d, %d answers; want 200, "+
			"the first served, the second 413 naming the write and the limit, the third not served", status, len(out.Answers))
		for _, a := range out.Answers {
			t.Logf("  %d %.300s", a.Status, a.Body)
		}
	}
	tx, _ := c.Tx(ctx, begun.Tx)
	committed, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if committed.Changes != 1 {
		t.Errorf("the commit changed %d files, want 1 (the refused write staged nothing)", committed.Changes)
	}
	if _, err := os.Stat(filepath.Join(ws, "big.txt")); err == nil {
		t.Error("the refused write reached the workspace")
	}
	res, err := stop()
	if err != nil || res.Unreadable != "" {
		t.Fatalf("the run: %v, tape unreadable %q", err, res.Unreadable)
	}
	var writes []string
	for _, p := range tapetest.Payloads(t, tape, tapefmt.KindControl) {
		if ctl := p.(*tapefmt.Control); strings.HasSuffix(ctl.Path, "/write") {
			writes = append(writes, fmt.Sprintf("%d %s", ctl.Status, ctl.Request))
		}
	}
	if len(writes) != 1 || !strings.Contains(writes[0], "small.txt") {
		t.Errorf("the writes' exchanges on the tape: %q, want the small write's alone", writes)
	}
}

// TestStagePathTooLargeToTapeIsRefused: a stage-path (a SQLite database
// the agent then changes itself) is taped with the staged copy as it was,
// a blob: a replay gives the agent a scratch copy of it. A database over
// a blob's 256 MiB was copied up and answered, its frame then failed to
// be written (the tape did not read back, after the agent had gone on).
// It is refused before anything is staged, naming the file and the
// limit; a smaller one is staged.
func TestStagePathTooLargeToTapeIsRefused(t *testing.T) {
	ctx := context.Background()
	ws, tape := t.TempDir(), filepath.Join(t.TempDir(), "db.jbx")
	big, err := os.Create(filepath.Join(ws, "big.db"))
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(big.Truncate(tapefmt.MaxBlobSize + 1)) // sparse: nothing written
	must(big.Close())
	must(os.WriteFile(filepath.Join(ws, "small.db"), []byte("SQLite format 3\x00"), 0o644))
	c, stop := serveRun(t, ws, tape)
	begun, err := c.Begin(ctx, controlapi.Begin{Name: "db"})
	must(err)
	tx, _ := c.Tx(ctx, begun.Tx)
	_, err = tx.StagePath(ctx, controlapi.PathOf{Path: "big.db"})
	if ce, ok := errors.AsType[*controlapi.Error](err); !ok || ce.Status != 413 || !strings.Contains(ce.Message, "big.db") || !strings.Contains(ce.Message, "256 MiB") {
		t.Errorf("stage-path of a database one byte over 256 MiB: %v; want 413 naming it and the limit", err)
	}
	if _, err := tx.StagePath(ctx, controlapi.PathOf{Path: "small.db"}); err != nil {
		t.Errorf("stage-path of a small database: %v", err)
	}
	must(func() error { _, err := tx.Rollback(ctx, controlapi.Rollback{}); return err }())
	res, err := stop()
	if err != nil || res.Unreadable != "" {
		t.Fatalf("the run: %v, tape unreadable %q", err, res.Unreadable)
	}
}
