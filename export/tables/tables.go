// Package tables writes tapes as tables a query engine reads where they
// lie: Parquet files, one row per model call and one per run, in a
// Hive-partitioned layout (calls/date=YYYY-MM-DD/NAME.parquet,
// runs/date=YYYY-MM-DD/NAME.parquet) that DuckDB, Athena, Spark, Trino and
// ClickHouse read as two tables partitioned by date.
//
// The numbers are the read side's, from timeline.SummarizeCalls (a run as
// Summarize reads it, its calls as CallRecords does, in one pass): the
// same that `jukebox cost`, `show --json` and `ls` print. Where the files go (a
// folder, a store) is the caller's: Files hands back keys and bytes.
package tables

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jukebox-os/jukebox/internal/parquetw"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// Call is one row of the calls table: a model call.
type Call struct {
	TapeID       string            `parquet:"tape_id"`
	Run          string            `parquet:"run_name"`
	Tags         map[string]string `parquet:"tags"`
	Time         time.Time         `parquet:"time,timestamp(microsecond)"`
	Call         int64             `parquet:"call"`
	Frame        int64             `parquet:"frame"`
	Provider     string            `parquet:"provider"`
	Model        string            `parquet:"model"`
	TokensIn     int64             `parquet:"tokens_in"`
	TokensOut    int64             `parquet:"tokens_out"`
	TokensCached int64             `parquet:"tokens_cached"`
	CacheWrite   int64             `parquet:"tokens_cache_write"`
	Reasoning    int64             `parquet:"tokens_reasoning"`
	Cost         float64           `parquet:"cost_usd"`
	Priced       bool              `parquet:"priced"`
	Estimated    bool              `parquet:"estimated"`
	LatencyMS    float64           `parquet:"latency_ms"`
	ElapsedMS    float64           `parquet:"elapsed_ms"`
	FirstChunkMS *float64          `parquet:"first_chunk_ms,optional"`
	Status       int32             `parquet:"status"`
	Error        string            `parquet:"error"`
	Tools        []string          `parquet:"tool_names,list"`
	Step         int32             `parquet:"step"`
	Agent        string            `parquet:"agent"`
}

// Run is one row of the runs table: a tape.
type Run struct {
	TapeID       string            `parquet:"tape_id"`
	Run          string            `parquet:"run_name"`
	Tags         map[string]string `parquet:"tags"`
	User         string            `parquet:"user"`
	Host         string            `parquet:"host"`
	GitCommit    string            `parquet:"git_commit"`
	GitBranch    string            `parquet:"git_branch"`
	Started      time.Time         `parquet:"started,timestamp(microsecond)"`
	DurationMS   float64           `parquet:"duration_ms"`
	ExitCode     *int32            `parquet:"exit_code,optional"` // null while the run has no end
	Signal       string            `parquet:"signal"`
	Calls        int64             `parquet:"calls"`
	Steps        int64             `parquet:"steps"`
	Frames       int64             `parquet:"frames"`
	TokensIn     int64             `parquet:"tokens_in"`
	TokensOut    int64             `parquet:"tokens_out"`
	TokensCached int64             `parquet:"tokens_cached"`
	Cost         float64           `parquet:"cost_usd"`
	Unpriced     []string          `parquet:"unpriced_models,list"`
	Estimated    int64             `parquet:"estimated_calls"`
	Sealed       bool              `parquet:"sealed"`
	Parent       string            `parquet:"parent_tape"` // the parent's chain head, for a fork
	Source       string            `parquet:"source"`      // the tape's path or URL as given
}

// Batch gathers the rows of tapes until Files writes them. Add may be
// called from several goroutines at once.
type Batch struct {
	mu    sync.Mutex
	calls map[string][]Call // by date
	runs  map[string][]Run
	ids   []string
}

// NewBatch is an empty batch.
func NewBatch() *Batch { return &Batch{calls: map[string][]Call{}, runs: map[string][]Run{}} }

// Counts are the rows a batch holds.
type Counts struct{ Tapes, Calls, Runs int }

// Counts says how many rows the batch holds.
func (b *Batch) Counts() Counts {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := Counts{Tapes: len(b.ids)}
	for _, r := range b.calls {
		c.Calls += len(r)
	}
	for _, r := range b.runs {
		c.Runs += len(r)
	}
	return c
}

// date is the partition of a time: its day in UTC.
func date(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// Add reads a tape's run and calls into the batch; source is the path or
// URL it was read from. On an error nothing of the tape is added.
func (b *Batch) Add(source string, t *tapefmt.Tape) error {
	s, calls, err := timeline.SummarizeCalls(source, t)
	if err != nil {
		return err
	}
	id := t.ID()
	tapeID := hex.EncodeToString(id[:])
	tags := s.Tags
	if tags == nil {
		tags = map[string]string{} // an empty map, never null: a run without tags
	}
	run := Run{TapeID: tapeID, Run: s.Name, Tags: tags, User: s.User, Host: s.Host, Started: s.Started.UTC(),
		DurationMS: ms(s.Duration), Calls: int64(s.Calls), Steps: int64(s.Steps), Frames: int64(s.Frames),
		TokensIn: s.Usage.Input, TokensOut: s.Usage.Output, TokensCached: s.Usage.Cached, Cost: s.Cost,
		Unpriced: s.Unpriced, Estimated: int64(s.Estimated), Sealed: s.Sealed, Source: source}
	if s.Git != nil {
		run.GitCommit, run.GitBranch = s.Git.Commit, s.Git.Branch
	}
	if s.Exit != nil {
		code := int32(s.Exit.ExitCode)
		run.ExitCode, run.Signal = &code, s.Exit.Signal
	}
	if s.Parent != nil {
		run.Parent = s.Parent.Tape
	}
	rows := make([]Call, 0, len(calls))
	for _, c := range calls {
		row := Call{TapeID: tapeID, Run: s.Name, Tags: tags, Time: c.Time.UTC(), Call: int64(c.Call), Frame: int64(c.Frame),
			Provider: c.Provider, Model: c.Model, TokensIn: c.Usage.Input, TokensOut: c.Usage.Output,
			TokensCached: c.Usage.Cached, CacheWrite: c.Usage.CacheWrite, Reasoning: c.Usage.Reasoning,
			Cost: c.Cost, Priced: c.Priced, Estimated: c.Estimated, LatencyMS: ms(c.Latency), ElapsedMS: ms(c.Elapsed),
			Status: int32(c.Status), Error: c.Error, Tools: c.Tools, Step: int32(c.Step), Agent: c.Agent}
		if c.FirstChunk > 0 {
			v := ms(c.FirstChunk)
			row.FirstChunkMS = &v
		}
		rows = append(rows, row)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	d := date(s.Started)
	b.runs[d] = append(b.runs[d], run)
	for _, r := range rows {
		d := date(r.Time)
		b.calls[d] = append(b.calls[d], r)
	}
	b.ids = append(b.ids, tapeID)
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// File is one Parquet file of a batch: its key under the output (a
// slash-separated path) and its bytes.
type File struct {
	Key  string
	Data []byte
	Rows int
}

// Files writes the batch as Parquet, one file per table and date, each
// named name.parquet under calls/date=D/ and runs/date=D/. A name made
// of the tapes (Name) makes a second export of the same tapes write the
// same files again rather than add rows twice.
//
// Rows are in the order of their tape's id, then its calls': the same
// tapes make the same bytes in whatever order they were added.
func (b *Batch) Files(name string) ([]File, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []File
	for _, d := range slices.Sorted(maps.Keys(b.calls)) {
		slices.SortStableFunc(b.calls[d], func(x, y Call) int {
			return cmp.Or(strings.Compare(x.TapeID, y.TapeID), cmp.Compare(x.Call, y.Call))
		})
		f, err := file(fmt.Sprintf("calls/date=%s/%s.parquet", d, name), b.calls[d])
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	for _, d := range slices.Sorted(maps.Keys(b.runs)) {
		slices.SortStableFunc(b.runs[d], func(x, y Run) int { return strings.Compare(x.TapeID, y.TapeID) })
		f, err := file(fmt.Sprintf("runs/date=%s/%s.parquet", d, name), b.runs[d])
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func file[T any](key string, rows []T) (File, error) {
	data, err := parquetw.Write(rows)
	if err != nil {
		return File{}, fmt.Errorf("%s: %w", key, err)
	}
	return File{Key: key, Data: data, Rows: len(rows)}, nil
}

// Name is a file name for the batch made of its tapes' ids: "tape-" and
// the id for one tape, else "tapes-" and a digest of the sorted ids.
func (b *Batch) Name() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.ids) == 1 {
		return "tape-" + b.ids[0]
	}
	ids := slices.Sorted(slices.Values(b.ids))
	return "tapes-" + digest(ids)
}

// digest is the first 16 hex digits of the SHA-256 of the ids, one a line.
func digest(ids []string) string {
	h := sha256.New()
	for _, id := range ids {
		h.Write([]byte(id + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
