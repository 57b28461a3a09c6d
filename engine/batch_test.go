package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/controlapi"
	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestBatchEncodingsTapeAlike: a write sent in a JSON batch and one sent
// in a binary batch (its content after the JSON, as the Python SDK sends
// it) are staged alike and taped alike: each control frame holds the
// write's own request, content in it (base64 for bytes).
func TestBatchEncodingsTapeAlike(t *testing.T) {
	ws, tape := t.TempDir(), filepath.Join(t.TempDir(), "batch.jbx")
	ctx := context.Background()
	c, stop := serveClient(t, ws, tape)
	tx, err := c.Begin(ctx, controlapi.Begin{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	batch := controlapi.Batch{Ops: []controlapi.BatchOp{
		{Op: "write", Body: json.RawMessage(`{"path":"a.txt","content":"héllo <x>\n"}`)},
		{Op: "write", Body: json.RawMessage(`{"path":"b.bin","content":"/wB4","base64":true}`)},
	}}
	jsonBody, err := json.Marshal(batch)
	if err != nil {
		t.Fatal(err)
	}
	binBody, err := batch.Binary()
	if err != nil {
		t.Fatal(err)
	}
	for _, send := range []struct {
		ctype string
		data  []byte
	}{{"application/json", jsonBody}, {controlapi.BatchContentType, binBody}} {
		status, out := postBatch(t, c, tx.Tx, send.ctype, send.data)
		if status != 200 || len(out.Answers) != 2 || out.Answers[0].Status != 200 || out.Answers[1].Status != 200 {
			t.Fatalf("%s batch: HTTP %d %+v", send.ctype, status, out)
		}
	}
	// A write over the 16 MiB of a request of its own, in a binary batch
	// (made here: Batch.Binary would decode 17 MiB of JSON first).
	big := bytes.Repeat([]byte("0123456789abcdef"), 17<<16) // 17 MiB
	head := fmt.Appendf(nil, `{"ops":[{"op":"write","body":{"path":"big.txt"},"content":%d}]}`+"\n", len(big))
	status, bigOut := postBatch(t, c, tx.Tx, controlapi.BatchContentType, append(head, big...))
	if status != 200 || len(bigOut.Answers) != 1 || bigOut.Answers[0].Status != 200 {
		t.Fatalf("a batch of 17 MiB: HTTP %d %+v", status, bigOut)
	}
	t2, _ := c.Tx(ctx, tx.Tx)
	if _, err := t2.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "a.txt")); err != nil || string(b) != "héllo <x>\n" {
		t.Errorf("a.txt: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "b.bin")); err != nil || !bytes.Equal(b, []byte{0xff, 0, 'x'}) {
		t.Errorf("b.bin: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "big.txt")); err != nil || !bytes.Equal(b, big) {
		t.Errorf("big.txt: %d bytes, %v; want %d", len(b), err, len(big))
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	var writes []map[string]any
	bigTaped := false
	for f, err := range tp.Frames(tapefmt.KindControl) {
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := p.(*tapefmt.Control); ok && filepath.Base(c.Path) == "write" {
			req := []byte(c.Request)
			if !c.RequestBody.IsZero() {
				if req, err = tp.Blob(c.RequestBody); err != nil {
					t.Fatal(err)
				}
			}
			if len(req) > 1<<20 { // the 17 MiB write: its request as the server builds it
				if want := `{"path":"big.txt","content":"` + string(big) + `"}`; string(req) != want {
					t.Errorf("frame %d: the 17 MiB write is taped as %d bytes (%.100s...), want %d", f.Seq, len(req), req, len(want))
				}
				bigTaped = true
				continue
			}
			var m map[string]any
			if err := json.Unmarshal(req, &m); err != nil {
				t.Fatalf("frame %d: %v (%.200s)", f.Seq, err, req)
			}
			writes = append(writes, m)
		}
	}
	if len(writes) != 4 || !bigTaped {
		t.Fatalf("%d write frames and the 17 MiB one %v, want 4 and true", len(writes), bigTaped)
	}
	for i := range 2 {
		j, b := mustMarshal(t, writes[i]), mustMarshal(t, writes[i+2])
		if j != b {
			t.Errorf("write %d taped as %s from JSON, %s from the binary batch", i, j, b)
		}
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// postBatch posts data, a batch's body of content type ctype, to the
// open transaction tx: the HTTP status and the answers.
func postBatch(t *testing.T, c *controlapi.Client, tx, ctype string, data []byte) (int, controlapi.Batched) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", c.Base+"/v1/tx/"+tx+"/batch", bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out controlapi.Batched
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// serveClient serves a run over the workspace ws onto tape (engine.Serve)
// and gives a client of its control API, and the stop that ends the run
// and returns Serve's error.
func serveClient(tb testing.TB, ws, tape string) (*controlapi.Client, func() error) {
	c, stop := serveRun(tb, ws, tape)
	return c, func() error { _, err := stop(); return err }
}

// serveRun is serveClient whose stop returns the run's result too.
func serveRun(tb testing.TB, ws, tape string) (*controlapi.Client, func() (*engine.Result, error)) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	type ended struct {
		res *engine.Result
		err error
	}
	ready, done := make(chan engine.ServeInfo, 1), make(chan ended, 1)
	go func() {
		res, err := engine.Serve(ctx, engine.ServeOptions{RunOptions: engine.RunOptions{Argv: []string{"agent"}, Dir: ws},
			Tape: tape, Ready: func(i engine.ServeInfo) { ready <- i }})
		done <- ended{res, err}
	}()
	select {
	case info := <-ready:
		c := &controlapi.Client{Base: info.Env[controlapi.BaseEnv], Token: info.Env[controlapi.TokenEnv]}
		return c, func() (*engine.Result, error) { cancel(); e := <-done; return e.res, e.err }
	case e := <-done:
		cancel()
		tb.Fatalf("Serve ended before it served: %v", e.err)
		return nil, nil
	}
}

// TestControlExchangesCounted: the control-API exchanges a run puts on
// its tape are counted in its result (the CLI tells a run with them and
// no model call from one in which nothing went through jukebox), and
// what only asks about the run (info) is not.
func TestControlExchangesCounted(t *testing.T) {
	ctx := context.Background()
	c, stop := serveRun(t, t.TempDir(), filepath.Join(t.TempDir(), "count.jbx"))
	if _, err := c.Info(ctx); err != nil {
		t.Fatal(err)
	}
	begun, err := c.Begin(ctx, controlapi.Begin{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := c.Tx(ctx, begun.Tx)
	if _, err := tx.Write(ctx, controlapi.Write{Path: "a.txt", Content: new("a")}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Rollback(ctx, controlapi.Rollback{}); err != nil {
		t.Fatal(err)
	}
	res, err := stop()
	if err != nil {
		t.Fatal(err)
	}
	if res.ControlExchanges != 3 || res.Calls != 0 {
		t.Errorf("a run with a begin, a write and a rollback: %d control exchanges, %d calls; want 3, 0", res.ControlExchanges, res.Calls)
	}
}

// TestSDKCommitSurvivesACrash: a run that works through the control API
// alone (the Python SDK, no model call) never ended a step, so a tape
// cut by a crash (kill -9 of jukebox serve or record) kept nothing after
// run.start while the commit was in the workspace. A transaction's end
// ends a step: the tape as it lies on disk mid-run, read as a crash would
// leave it, holds the commit and the rollback.
func TestSDKCommitSurvivesACrash(t *testing.T) {
	ctx := context.Background()
	ws, tape := t.TempDir(), filepath.Join(t.TempDir(), "sdk.jbx")
	c, stop := serveClient(t, ws, tape)
	defer stop()
	for _, end := range []string{"commit", "rollback"} {
		begun, err := c.Begin(ctx, controlapi.Begin{Name: end})
		if err != nil {
			t.Fatal(err)
		}
		tx, _ := c.Tx(ctx, begun.Tx)
		content := "kept\n"
		if _, err := tx.Write(ctx, controlapi.Write{Path: end + ".txt", Content: &content}); err != nil {
			t.Fatal(err)
		}
		if end == "commit" {
			_, err = tx.Commit(ctx)
		} else {
			_, err = tx.Rollback(ctx, controlapi.Rollback{Reason: "no"})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	tp, err := tapefmt.Open(tape) // no footer yet: read up to its last whole step
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	var kinds []string
	for f, err := range tp.Frames() {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, f.Kind.String())
	}
	got := strings.Join(kinds, " ")
	if !strings.Contains(got, "tx.commit") || !strings.Contains(got, "tx.rollback") {
		t.Fatalf("the tape as a crash would leave it: %s; want the commit and the rollback", got)
	}
}

// TestBatchTapesInOrder: the writes and deletes of a binary batch, taped
// beside the staging of what follows them, are on the tape in the
// batch's order, each as its own request, before the commit the batch
// ends with; a batch that stops at a failing write tapes that write and
// nothing after it, and a request sent after the batch's answer is taped
// after all of it.
func TestBatchTapesInOrder(t *testing.T) {
	ws, tape := t.TempDir(), filepath.Join(t.TempDir(), "order.jbx")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(ws, "old.txt"), []byte("old"), 0o644))
	must(os.Mkdir(filepath.Join(ws, "adir"), 0o755))
	ctx := context.Background()
	c, stop := serveClient(t, ws, tape)
	write := func(name string, size int) controlapi.BatchOp {
		body := fmt.Appendf(nil, `{"path":%q,"content":%q}`, name, strings.Repeat(name[:1], size))
		return controlapi.BatchOp{Op: "write", Body: body}
	}
	var want []string // each control frame of the transactions: path and, for writes, the request
	send := func(tx string, ops []controlapi.BatchOp) controlapi.Batched {
		t.Helper()
		data, err := controlapi.Batch{Ops: ops}.Binary()
		must(err)
		status, out := postBatch(t, c, tx, controlapi.BatchContentType, data)
		if status != 200 {
			t.Fatalf("batch: HTTP %d %+v", status, out)
		}
		return out
	}
	tx1, err := c.Begin(ctx, controlapi.Begin{Name: "one"})
	must(err)
	var ops []controlapi.BatchOp
	for i := range 110 {
		size := i * 97
		if i >= 107 {
			size = 1 << 20 // slower to tape than to stage: a commit after them waits for their frames
		}
		ops = append(ops, write(fmt.Sprintf("w-%03d.txt", i), size))
		want = append(want, "write "+string(ops[i].Body))
	}
	ops = append(ops, controlapi.BatchOp{Op: "delete", Body: json.RawMessage(`{"path":"old.txt"}`)}, controlapi.BatchOp{Op: "commit"})
	want = append(want, "delete", "commit")
	if out := send(tx1.Tx, ops); len(out.Answers) != len(ops) || out.Answers[len(ops)-1].Status != 200 {
		t.Fatalf("the first batch: %d answers, the last %+v", len(out.Answers), out.Answers[len(out.Answers)-1])
	}
	tx2, err := c.Begin(ctx, controlapi.Begin{Name: "two"})
	must(err)
	ops = []controlapi.BatchOp{write("x-1.txt", 10), write("x-2.txt", 5000), write("adir", 3), write("x-3.txt", 1)}
	want = append(want, "write "+string(ops[0].Body), "write "+string(ops[1].Body), "write "+string(ops[2].Body), "rollback")
	if out := send(tx2.Tx, ops); len(out.Answers) != 3 || out.Answers[2].Status == 200 {
		t.Fatalf("the second batch, stopped by its third write: %+v", out.Answers)
	}
	t2, err := c.Tx(ctx, tx2.Tx)
	must(err)
	_, err = t2.Rollback(ctx, controlapi.Rollback{})
	must(err)
	must(stop())
	tp, err := tapefmt.Open(tape)
	must(err)
	defer tp.Close()
	var got []string
	for f, err := range tp.Frames(tapefmt.KindControl) {
		must(err)
		p, err := f.Decode()
		must(err)
		ctl, ok := p.(*tapefmt.Control)
		if !ok || !strings.HasPrefix(ctl.Path, "/v1/tx/") {
			continue
		}
		switch op := filepath.Base(ctl.Path); op {
		case "write":
			req := []byte(ctl.Request)
			if !ctl.RequestBody.IsZero() {
				req, err = tp.Blob(ctl.RequestBody)
				must(err)
			}
			got = append(got, "write "+string(req))
		case "delete", "commit", "rollback":
			got = append(got, op)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d frames of the transactions' operations, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("frame %d of the operations: %.80s, want %.80s", i, got[i], want[i])
		}
	}
}
