package tables

import (
	"bytes"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/jukebox-os/jukebox/internal/tapegen"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// readRows reads a Parquet file back with parquet-go's reader: the
// second reader of the export, beside DuckDB in cmd/jukebox's tests.
func readRows[T any](t *testing.T, f File) []T {
	t.Helper()
	r := parquet.NewGenericReader[T](bytes.NewReader(f.Data))
	defer r.Close()
	rows := make([]T, r.NumRows())
	n, err := r.Read(rows)
	if err != nil && n != len(rows) {
		t.Fatalf("%s: %v", f.Key, err)
	}
	return rows[:n]
}

func genTape(t *testing.T, s tapegen.Spec) *tapefmt.Tape {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.jbx")
	if err := tapegen.WriteFile(path, s); err != nil {
		t.Fatal(err)
	}
	tp, err := tapefmt.OpenWith(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Close() })
	return tp
}

// TestRowsReadBack: the files read back hold a row per call with the
// bill's tokens and cost, the stream's first chunk, the tool called and
// the run's tags (an empty map for a run without).
func TestRowsReadBack(t *testing.T) {
	tagged := genTape(t, tapegen.Spec{Steps: 4, Chunks: 3, Model: "gpt-4o-mini", Tags: map[string]string{"team": "search"}, ID: [16]byte{9}})
	plain := genTape(t, tapegen.Spec{Steps: 2, Chunks: 5, Model: "gpt-4o"})
	b := NewBatch()
	for name, tp := range map[string]*tapefmt.Tape{"tagged.jbx": tagged, "plain.jbx": plain} {
		if err := b.Add(name, tp); err != nil {
			t.Fatal(err)
		}
	}
	files, err := b.Files(b.Name())
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Key != "calls/date=2026-12-01/"+b.Name()+".parquet" || !strings.HasPrefix(files[1].Key, "runs/date=2026-12-01/") {
		t.Fatalf("files: %v", keys(files))
	}
	calls := readRows[Call](t, files[0])
	runs := readRows[Run](t, files[1])
	if len(calls) != 6 || len(runs) != 2 {
		t.Fatalf("%d calls, %d runs read back", len(calls), len(runs))
	}
	for _, tc := range []struct {
		tp   *tapefmt.Tape
		tags map[string]string
	}{{tagged, map[string]string{"team": "search"}}, {plain, map[string]string{}}} {
		bill, err := timeline.MakeBill(tc.tp, timeline.ByModel)
		if err != nil {
			t.Fatal(err)
		}
		id := tc.tp.ID()
		var n int
		var in, out int64
		var cost float64
		for _, c := range calls {
			if c.TapeID != hexID(id) {
				continue
			}
			n++
			in, out, cost = in+c.TokensIn, out+c.TokensOut, cost+c.Cost
			if c.FirstChunkMS == nil || *c.FirstChunkMS <= 0 || !slices.Equal(c.Tools, []string{"write_file"}) ||
				c.Status != 200 || c.Provider != "openai" || !c.Priced || c.Time.Before(tc.tp.Created()) || c.LatencyMS != 200 {
				t.Errorf("call row %+v", c)
			}
			if len(c.Tags) != len(tc.tags) || c.Tags["team"] != tc.tags["team"] {
				t.Errorf("call tags %v, want %v", c.Tags, tc.tags)
			}
		}
		if n != bill.Total.Calls || in != bill.Total.Usage.Input || out != bill.Total.Usage.Output || math.Abs(cost-bill.Total.Cost) > 1e-12 {
			t.Errorf("%s: rows %d calls %d/%d tokens $%g; bill %+v", hexID(id), n, in, out, cost, bill.Total)
		}
		i := slices.IndexFunc(runs, func(r Run) bool { return r.TapeID == hexID(id) })
		if i < 0 {
			t.Fatalf("no run row for %s", hexID(id))
		}
		r := runs[i]
		if r.Calls != int64(n) || math.Abs(r.Cost-bill.Total.Cost) > 1e-12 || r.ExitCode == nil || *r.ExitCode != 0 ||
			!r.Started.Equal(tc.tp.Created()) || len(r.Tags) != len(tc.tags) || r.Run != "sample-agent" {
			t.Errorf("run row %+v", r)
		}
	}
}

// TestPartitionByDay: calls go to the file of their day in UTC.
func TestPartitionByDay(t *testing.T) {
	b := NewBatch()
	for _, at := range []time.Time{time.Date(2026, 12, 1, 23, 59, 0, 0, time.UTC),
		time.Date(2026, 12, 2, 0, 30, 0, 0, time.FixedZone("UTC+1", 3600)), // 23:30 UTC, the day before
		time.Date(2026, 12, 2, 0, 0, 1, 0, time.UTC)} {
		d := date(at)
		b.calls[d] = append(b.calls[d], Call{TapeID: "a", Time: at})
	}
	b.ids = []string{"a"}
	files, err := b.Files(b.Name())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"calls/date=2026-12-01/tape-a.parquet", "calls/date=2026-12-02/tape-a.parquet"}
	if got := keys(files); !slices.Equal(got, want) || files[0].Rows != 2 {
		t.Errorf("files %v (%d rows in the first), want %v", got, files[0].Rows, want)
	}
}

func keys(files []File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Key)
	}
	return out
}

func hexID(id [16]byte) string { return hex.EncodeToString(id[:]) }

// BenchmarkAdd reads one generated 20-step run into a batch, as export
// parquet does each tape: b.SetBytes is the tape's size, so the MB/s
// printed is tape read (bench/parquet measures the whole command).
func BenchmarkAdd(b *testing.B) {
	path := filepath.Join(b.TempDir(), "run.jbx")
	if err := tapegen.WriteFile(path, tapegen.Spec{Steps: 20, Chunks: 24, Model: "gpt-4o-mini"}); err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	for b.Loop() {
		tp, err := tapefmt.OpenWith(path, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := NewBatch().Add(path, tp); err != nil {
			b.Fatal(err)
		}
		tp.Close()
	}
}
