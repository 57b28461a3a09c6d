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
)

// BenchmarkStagedWriteBatch is the server's side of the Python SDK's
// staged writes (python/bench/sdk_bench.py): batches of 200 writes of
// 4 KiB over HTTP to a served run, each staged in the booth and taped,
// beside plain writes of the same files. ns/op is per write.
func BenchmarkStagedWriteBatch(b *testing.B) {
	const perBatch = 200
	content := strings.Repeat("x", 4096)
	b.Run("plain", func(b *testing.B) {
		// Removed by the batch, as a rollback removes the staged ones:
		// a file system may pay for reusing inodes freed just now.
		dir := b.TempDir()
		b.SetBytes(int64(len(content)))
		for i := range b.N {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("plain-%d.txt", i)), []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
			if (i+1)%perBatch == 0 {
				b.StopTimer()
				for j := i + 1 - perBatch; j <= i; j++ {
					os.Remove(filepath.Join(dir, fmt.Sprintf("plain-%d.txt", j)))
				}
				b.StartTimer()
			}
		}
	})
	b.Run("staged", func(b *testing.B) {
		ctx := context.Background()
		c, stop := serveClient(b, b.TempDir(), filepath.Join(b.TempDir(), "bench.jbx"))
		defer stop()
		// The batches are encoded before the clock runs: what is timed is
		// the server's side, and the request's way there and back.
		var bodies [][]byte
		for n := 0; n < b.N; {
			var batch controlapi.Batch
			for i := 0; i < perBatch && n < b.N; i++ {
				body := fmt.Appendf(nil, `{"path":"staged-%d.txt","content":%q}`, n, content)
				batch.Ops = append(batch.Ops, controlapi.BatchOp{Op: "write", Body: body, Base: &controlapi.FileBase{}})
				n++
			}
			data, err := batch.Binary()
			if err != nil {
				b.Fatal(err)
			}
			bodies = append(bodies, data)
		}
		b.SetBytes(int64(len(content)))
		b.ResetTimer()
		for _, data := range bodies {
			b.StopTimer()
			tx, err := c.Begin(ctx, controlapi.Begin{Name: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			req, err := http.NewRequestWithContext(ctx, "POST", c.Base+"/v1/tx/"+tx.Tx+"/batch", bytes.NewReader(data))
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+c.Token)
			req.Header.Set("Content-Type", controlapi.BatchContentType)
			b.StartTimer()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			var out controlapi.Batched
			err = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			b.StopTimer()
			if err != nil || resp.StatusCode != http.StatusOK || len(out.Answers) == 0 || out.Answers[len(out.Answers)-1].Status != http.StatusOK {
				b.Fatalf("batch: HTTP %d, %+v, %v", resp.StatusCode, out, err)
			}
			t, _ := c.Tx(ctx, tx.Tx)
			if _, err := t.Rollback(ctx, controlapi.Rollback{}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
}
