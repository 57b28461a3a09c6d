package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/jukebox-os/jukebox/breaker"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/tapestore"
	"github.com/jukebox-os/jukebox/timeline"
)

// LsCmd lists the recordings in folders, or tapes named one by one.
type LsCmd struct {
	Paths []string `arg:"" optional:"" name:"path" default:"tapes" help:"Folders to list, tapes, or stores (s3://BUCKET/PREFIX/ and the like; default ./tapes)."`
	JSON  bool     `help:"Print one JSON array of summaries."`
	Tag   []string `placeholder:"KEY[=VALUE]" help:"Only runs with this tag (record --tag): KEY=VALUE wants that value, KEY any value. Repeatable: a run must have all of them."`
}

// expandTapes is the tapes named and every *.jbx file in the folders named,
// in the order given (a folder's by name).
func expandTapes(args []string) ([]string, error) {
	var paths []string
	for _, p := range args {
		if tapestore.IsURL(p) { // a tape in a store (tapestore.Opener reads it)
			paths = append(paths, p)
			continue
		}
		st, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("no folder or tape %s: record a run with `jukebox record -- CMD` or name a folder", p)
		case err != nil:
			return nil, err
		case !st.IsDir():
			paths = append(paths, p)
			continue
		}
		in, err := filepath.Glob(filepath.Join(p, "*.jbx"))
		if err != nil {
			return nil, err
		}
		paths = append(paths, in...)
	}
	return paths, nil
}

// lsRow is one tape: its summary, or why it could not be read.
type lsRow struct {
	// Tape names the tape as the text listing does: its file name without
	// .jbx (the run's own name, which several tapes may share, is Name).
	Tape string `json:"tape"`
	timeline.Summary
	Error string `json:"error,omitempty"`
	// Damaged says the tape opens but fails the quick check of `jukebox
	// verify --quick` (CRCs, hash chain, index); Damage says why.
	Damaged bool   `json:"damaged"`
	Damage  string `json:"damage,omitempty"`
}

// Run lists every *.jbx file in the folders, and the tapes named, newest
// first.
func (c *LsCmd) Run(ctx context.Context, env *Env) error {
	var local []string
	for _, p := range c.Paths {
		loc, err := tapestore.Parse(p)
		switch {
		case errors.Is(err, tapestore.ErrNotURL), err == nil && loc.Name != "":
			local = append(local, p) // a path, or one tape in a store, read in place
		case err != nil:
			return withCode(ExitUsage, err)
		default:
			if err := lsStore(ctx, env, p, c.JSON, tagFilter(c.Tag)); err != nil {
				return err
			}
		}
	}
	if len(local) == 0 {
		return nil
	}
	paths, err := expandTapes(local)
	if err != nil {
		return err
	}
	rows := make([]lsRow, 0, len(paths))
	for _, p := range paths {
		if r := summarizeFile(env.remote(), p); tagFilter(c.Tag).match(r.Tags) {
			rows = append(rows, r)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Started.After(rows[j].Started) })
	if c.JSON {
		return writeJSON(env.Stdout, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(env.Stdout, "no tapes%s in %s\n", tagFilter(c.Tag).words(), strings.Join(local, ", "))
		return nil
	}
	tw := table(env.Stdout)
	tagged := slices.ContainsFunc(rows, func(r lsRow) bool { return len(r.Tags) > 0 })
	fmt.Fprintln(tw, "TAPE\tSTARTED\tDURATION\tFRAMES\tSTEPS\tTOKENS\tCOST\tEXIT\tPARENT"+tagsColumn(tagged, nil, true))
	for _, r := range rows {
		fmt.Fprintln(tw, r.line()+tagsColumn(tagged, r.Tags, false))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		if r.Damaged {
			fmt.Fprintf(env.Stdout, "DAMAGED %s: %s\n", r.Path, timeline.OneLine(r.Damage, 0))
		}
		if r.Breaker != nil {
			fmt.Fprintf(env.Stdout, "TRIPPED %s: %s\n", r.Tape, timeline.OneLine(r.Breaker.Reason, 0))
		}
	}
	return nil
}

func summarizeFile(remote tapefmt.RemoteOpener, path string) lsRow {
	name := filepath.Base(path)
	if loc, err := tapestore.Parse(path); err == nil {
		name = loc.Name // a store's tape: the name in its path, not its query
	}
	stem := strings.TrimSuffix(name, ".jbx")
	t, err := tapefmt.OpenWith(path, remote)
	if err != nil {
		return lsRow{Tape: stem, Summary: timeline.Summary{Path: path}, Error: err.Error()}
	}
	defer t.Close()
	s, err := timeline.Summarize(path, t)
	r := lsRow{Tape: stem, Summary: s}
	if err != nil {
		r.Error = err.Error()
	}
	if _, err := t.Verify(tapefmt.VerifyOptions{}); err != nil {
		r.Damaged, r.Damage = true, err.Error()
	}
	return r
}

func (r lsRow) line() string {
	name := r.Tape
	if r.Error != "" {
		return fmt.Sprintf("%s\t-\t-\t-\t-\t-\t-\tunreadable: %s\t", name, r.Error)
	}
	exit := r.ExitText()
	if r.Recovered != nil {
		exit += " (torn)"
	}
	if r.Damaged {
		exit += " DAMAGED"
	}
	if r.Breaker != nil {
		exit += " TRIPPED (" + r.Breaker.Rule + ")"
	}
	approx := timeline.Approx(r.Estimated)
	cost := approx + breaker.USD(r.Cost)
	if len(r.Unpriced) > 0 {
		cost += "+?"
	}
	parent := "-"
	if r.Parent != nil {
		parent = fmt.Sprintf("%s@%d", r.Parent.Tape[:min(12, len(r.Parent.Tape))], r.Parent.Frame)
	}
	return fmt.Sprintf("%s\t%s\t%s\t%d\t%d\t%s%d\t%s\t%s\t%s", name, r.Started.Local().Format("2006-01-02 15:04:05"),
		timeline.Clock(r.Duration), r.Frames, r.Steps, approx, r.Usage.Total(), cost, exit, parent)
}
