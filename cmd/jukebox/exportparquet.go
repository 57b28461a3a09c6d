package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	pathpkg "path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jukebox-os/jukebox/export/tables"
	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/tapestore"
)

// ExportParquetCmd writes tapes as Parquet tables.
type ExportParquetCmd struct {
	Tapes  []string `arg:"" name:"tape" help:"Tapes, folders of tapes, stores (s3://BUCKET/PREFIX/, listed as ls URL lists them) or tapes in a store."`
	Output string   `short:"o" required:"" placeholder:"DIR|URL" help:"Where the tables go: a folder, or a store URL whose calls/ and runs/ prefixes get the files."`
	JSON   bool     `help:"Print a summary as JSON: files written, rows, tapes that did not read."`
}

// Validate checks -o before any tape is read.
func (c *ExportParquetCmd) Validate() error {
	if tapestore.IsURL(c.Output) {
		loc, err := tapestore.Parse(c.Output)
		if err != nil {
			return fmt.Errorf("-o: %w", err)
		}
		if loc.Name != "" {
			return fmt.Errorf("-o %s: names a tape; give the store's URL (a prefix)", c.Output)
		}
		return nil
	}
	if st, err := os.Stat(c.Output); err == nil && !st.IsDir() {
		return fmt.Errorf("-o %s: not a folder", c.Output)
	}
	return nil
}

// exportProgressEvery is how many tapes pass between progress lines.
const exportProgressEvery = 100

// Run reads every tape into one batch, then writes its files; a tape
// that does not read is named and skipped, and the export exits non-zero
// at the end with the rest written.
func (c *ExportParquetCmd) Run(ctx context.Context, env *Env) error {
	paths, err := c.inputs(ctx)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return fmt.Errorf("no tapes in %s", strings.Join(c.Tapes, ", "))
	}
	b := tables.NewBatch()
	failed, err := readTapes(ctx, env, b, paths)
	if err != nil {
		return err
	}
	var files []tables.File
	if b.Counts().Tapes > 0 {
		if files, err = b.Files(b.Name()); err != nil {
			return err
		}
		if err := writeTables(ctx, c.Output, files); err != nil {
			return err
		}
	}
	n := b.Counts()
	if c.JSON {
		if err := writeJSON(env.Stdout, parquetReport(c.Output, files, n, failed)); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(env.Stdout, "exported %s (%s, %s) in %s to %s\n", termtext.Count(n.Tapes, "tape", "tapes"),
			termtext.Count(n.Calls, "call", "calls"), termtext.Count(n.Runs, "run", "runs"), termtext.Count(len(files), "file", "files"), c.Output)
	}
	if len(failed) > 0 {
		return withCode(ExitBadTape, fmt.Errorf("export parquet: %d of %d tapes did not read and were left out: %s",
			len(failed), len(paths), strings.Join(failed, ", ")))
	}
	return nil
}

// readTapes reads the tapes into the batch, as many at once as Go has
// processors: a tape that does not read is named on stderr and returned
// among failed, in the order given. Progress goes to stderr every
// exportProgressEvery tapes of a long export.
func readTapes(ctx context.Context, env *Env, b *tables.Batch, paths []string) (failed []string, err error) {
	errs := make([]error, len(paths))
	var next, done atomic.Int64
	var mu sync.Mutex // env.Stderr
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(paths)) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(paths) {
					return
				}
				errs[i] = addTape(b, paths[i], env.remote())
				if n := done.Add(1); len(paths) > exportProgressEvery && n%exportProgressEvery == 0 {
					mu.Lock()
					fmt.Fprintf(env.Stderr, "jukebox: export parquet: read %d of %d tapes\n", n, len(paths))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, err := range errs {
		if err != nil {
			fmt.Fprintf(env.Stderr, "jukebox: export parquet: skipped %s: %v\n", paths[i], err)
			failed = append(failed, paths[i])
		}
	}
	return failed, nil
}

// addTape reads one tape into the batch, a store's by remote.
func addTape(b *tables.Batch, path string, remote tapefmt.RemoteOpener) error {
	t, err := tapefmt.OpenWith(path, remote)
	if err != nil {
		return err
	}
	defer t.Close()
	return b.Add(path, t)
}

// inputs are the tapes the arguments name: a store URL is listed as ls
// URL lists it, a folder's tapes are its *.jbx.
func (c *ExportParquetCmd) inputs(ctx context.Context) ([]string, error) {
	var paths []string
	for _, a := range c.Tapes {
		if !tapestore.IsURL(a) {
			more, err := expandTapes([]string{a})
			if err != nil {
				return nil, err
			}
			paths = append(paths, more...)
			continue
		}
		loc, err := tapestore.Parse(a)
		if err != nil {
			return nil, withCode(ExitUsage, err)
		}
		if loc.Name != "" {
			paths = append(paths, a)
			continue
		}
		st, err := tapestore.Open(ctx, loc)
		if err != nil {
			return nil, err
		}
		entries, err := st.List(ctx)
		st.Close()
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			paths = append(paths, e.URL)
		}
	}
	return paths, nil
}

// writeTables puts the files under out: a store URL's keys, or a folder's
// files, each written whole to a temporary name and renamed, so a reader
// never sees half a file.
func writeTables(ctx context.Context, out string, files []tables.File) error {
	if tapestore.IsURL(out) {
		loc, err := tapestore.Parse(out) // checked by Validate
		if err != nil {
			return err
		}
		st, err := tapestore.Open(ctx, loc)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, f := range files {
			if err := st.Put(ctx, f.Key, f.Data, parquetType); err != nil {
				return err
			}
		}
		return nil
	}
	for _, f := range files {
		name := filepath.Join(out, filepath.FromSlash(f.Key))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		tmp := name + ".tmp"
		if err := os.WriteFile(tmp, f.Data, 0o644); err != nil {
			return errors.Join(err, os.Remove(tmp))
		}
		if err := os.Rename(tmp, name); err != nil {
			return err
		}
	}
	return nil
}

// putTables writes an uploaded tape's rows beside it in the store: one
// file per table and date, named after the tape's key
// (calls/date=D/KEY.parquet without .jbx), so that the store's calls/ and
// runs/ prefixes are tables of every tape uploaded.
func putTables(ctx context.Context, st *tapestore.Store, path, key string) error {
	b := tables.NewBatch()
	if err := addTape(b, path, nil); err != nil {
		return err
	}
	files, err := b.Files(strings.TrimSuffix(pathpkg.Base(key), tapestore.TapeExt))
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := st.Put(ctx, f.Key, f.Data, parquetType); err != nil {
			return err
		}
	}
	return nil
}

// parquetType is the media type of a Parquet file.
const parquetType = "application/vnd.apache.parquet"

// parquetReport is export parquet's --json.
func parquetReport(out string, files []tables.File, n tables.Counts, failed []string) any {
	type file struct {
		Path  string `json:"path"`
		Rows  int    `json:"rows"`
		Bytes int    `json:"bytes"`
	}
	r := struct {
		Output string   `json:"output"`
		Tapes  int      `json:"tapes"`
		Calls  int      `json:"call_rows"`
		Runs   int      `json:"run_rows"`
		Files  []file   `json:"files"`
		Failed []string `json:"failed"`
	}{Output: out, Tapes: n.Tapes, Calls: n.Calls, Runs: n.Runs, Files: []file{}, Failed: failed}
	if r.Failed == nil {
		r.Failed = []string{}
	}
	for _, f := range files {
		r.Files = append(r.Files, file{f.Key, f.Rows, len(f.Data)})
	}
	return r
}
