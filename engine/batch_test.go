package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
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
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan engine.ServeInfo, 1), make(chan error, 1)
	go func() {
		_, err := engine.Serve(ctx, engine.ServeOptions{RunOptions: engine.RunOptions{Argv: []string{"agent"}, Dir: ws},
			Tape: tape, Ready: func(i engine.ServeInfo) { ready <- i }})
		done <- err
	}()
	var info engine.ServeInfo
	select {
	case info = <-ready:
	case err := <-done:
		t.Fatalf("Serve ended before it served: %v", err)
	}
	c := &controlapi.Client{Base: info.Env[controlapi.BaseEnv], Token: info.Env[controlapi.TokenEnv]}
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
		req, _ := http.NewRequestWithContext(ctx, "POST", c.Base+"/v1/tx/"+tx.Tx+"/batch", bytes.NewReader(send.data))
		req.Header.Set("Authorization", "Bearer "+c.Token)
		req.Header.Set("Content-Type", send.ctype)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out controlapi.Batched
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(out.Answers) != 2 || out.Answers[0].Status != 200 || out.Answers[1].Status != 200 {
			t.Fatalf("%s batch: HTTP %d %+v", send.ctype, resp.StatusCode, out)
		}
	}
	// A write over the 16 MiB of a request of its own, in a binary batch.
	big := bytes.Repeat([]byte("0123456789abcdef"), 17<<16) // 17 MiB
	bigBatch := controlapi.Batch{Ops: []controlapi.BatchOp{{Op: "write", Body: mustJSONRaw(t, map[string]any{"path": "big.txt", "content": string(big)})}}}
	if out, err := c.Batch(ctx, tx.Tx, bigBatch); err != nil || len(out.Answers) != 1 || out.Answers[0].Status != 200 {
		t.Fatalf("a batch of 17 MiB: %+v %v", out, err)
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
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	var writes []map[string]any
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
			var m map[string]any
			if err := json.Unmarshal(req, &m); err != nil {
				t.Fatalf("frame %d: %v (%.200s)", f.Seq, err, req)
			}
			writes = append(writes, m)
		}
	}
	if len(writes) != 5 {
		t.Fatalf("%d write frames, want 5", len(writes))
	}
	if got, _ := writes[4]["content"].(string); got != string(big) {
		t.Errorf("the 17 MiB write is taped with %d bytes of content", len(got))
	}
	for i := range 2 {
		j, b := mustMarshal(t, writes[i]), mustMarshal(t, writes[i+2])
		if j != b {
			t.Errorf("write %d taped as %s from JSON, %s from the binary batch", i, j, b)
		}
	}
}

func mustJSONRaw(t *testing.T, v any) json.RawMessage {
	t.Helper()
	return json.RawMessage(mustMarshal(t, v))
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
