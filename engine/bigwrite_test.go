package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/controlapi"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestWriteTooLargeToTapeIsRefused: a binary batch's write is taped as
// the request it stands for, its content a JSON string, in one blob. 44
// MiB of control characters take six bytes each there (264 MiB, over the
// 256 MiB of a blob): the write was staged and committed, its control
// frame left off the tape without a word (the recording said nothing,
// its replay diverged at the write and printed 264 MiB of diff). It is
// refused with the batch now (413, naming the write and the limit), and
// nothing of it is staged; a write that fits is taped.
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
	batch := func(path string, content []byte) []byte {
		head := fmt.Appendf(nil, `{"ops":[{"op":"write","body":{"path":%q},"content":%d}]}`+"\n", path, len(content))
		return append(head, content...)
	}
	req, _ := http.NewRequestWithContext(ctx, "POST", c.Base+"/v1/tx/"+begun.Tx+"/batch", bytes.NewReader(batch("big.txt", bytes.Repeat([]byte{1}, 44<<20))))
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Content-Type", controlapi.BatchContentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 || !strings.Contains(string(answer), "write big.txt") || !strings.Contains(string(answer), "over the 256 MiB") {
		t.Errorf("a write whose taped form is 264 MiB: HTTP %d, %s; want 413 naming the write and the limit", resp.StatusCode, answer)
	}
	status, out := postBatch(t, c, begun.Tx, controlapi.BatchContentType, batch("small.txt", []byte("a\x01b\n")))
	if status != 200 || len(out.Answers) != 1 || out.Answers[0].Status != 200 {
		t.Fatalf("a small write: HTTP %d, %+v", status, out)
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
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	var writes []string
	for f, err := range tp.Frames(tapefmt.KindControl) {
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if ctl := p.(*tapefmt.Control); strings.HasSuffix(ctl.Path, "/write") {
			writes = append(writes, fmt.Sprintf("%d %s", ctl.Status, ctl.Request))
		}
	}
	if len(writes) != 1 || !strings.Contains(writes[0], "small.txt") {
		t.Errorf("the writes' exchanges on the tape: %q, want the small write's alone", writes)
	}
}
