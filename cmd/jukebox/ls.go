package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jukebox-os/jukebox/breaker"
	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/tapestore"
	"github.com/jukebox-os/jukebox/timeline"
)

// LsCmd lists the recordings in folders, or tapes named one by one.
type LsCmd struct {
	Paths     []string `arg:"" optional:"" name:"path" default:"tapes" help:"Folders to list, tapes, or stores (s3://BUCKET/PREFIX/ and the like; default ./tapes)."`
	JSON      bool     `help:"Print one JSON array of summaries."`
	Tag       []string `placeholder:"KEY[=VALUE]" sep:"none" help:"Only runs with this tag (record --tag): KEY=VALUE wants that value, KEY any value. Repeatable: a run must have all of them."`
	Since     string   `placeholder:"WHEN" help:"Only runs started since WHEN: a duration back from now (90m, 36h, 7d, 2w), a day (2026-12-01) or an RFC 3339 time. With --recursive, folders named after an earlier day (2026-11-30, 2026/11/30, date=2026-11-30) are not read."`
	Name      string   `placeholder:"GLOB" help:"Only runs whose name (record --name, else the agent's script) matches GLOB, e.g. 'triage*'."`
	Limit     int      `placeholder:"N" help:"List the N newest runs only."`
	Recursive bool     `short:"r" help:"List the folders below too (a store's date-partitioned prefixes, a folder's subfolders)."`
	Full      bool     `help:"For a store: read every tape's summary object, not the store's index (what ls reads by default, a few objects whatever the number of tapes)."`
}

// Validate checks the flags before anything is listed.
func (c *LsCmd) Validate() error {
	if c.Limit < 0 {
		return fmt.Errorf("--limit %d: want a number of runs, at least 1", c.Limit)
	}
	if _, err := path.Match(c.Name, ""); err != nil {
		return fmt.Errorf("--name %q: %w", c.Name, err)
	}
	for _, kv := range c.Tag {
		if !strings.Contains(kv, "=") {
			kv += "="
		}
		if _, _, err := parseTag(kv); err != nil {
			return fmt.Errorf("--tag %q: %w", kv, err)
		}
	}
	_, err := parseSince(c.Since, time.Now())
	return err
}

// filter is what the flags keep of the tapes found.
func (c *LsCmd) filter() lsFilter {
	since, _ := parseSince(c.Since, time.Now())
	return lsFilter{Tags: tagFilter(c.Tag), Since: since, Name: c.Name, Limit: c.Limit}
}

// expandTapes is the tapes named and every *.jbx file in the folders named,
// in the order given (a folder's by name). One that is not there is a bad
// argument (exit 2), as kong's existingfile makes it for the commands that
// take one tape.
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
			return nil, withCode(ExitUsage, fmt.Errorf("no folder or tape %s: record a run with `jukebox record -- CMD` or name a folder", p))
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

// expandTree is expandTapes with the folders' subfolders too (not the
// tapes' sidecar folders, NAME.jbx.d), tapes named by their path.
func expandTree(args []string) ([]string, error) {
	var paths []string
	for _, p := range args {
		if st, err := os.Stat(p); tapestore.IsURL(p) || err != nil || !st.IsDir() {
			more, err := expandTapes([]string{p})
			if err != nil {
				return nil, err
			}
			paths = append(paths, more...)
			continue
		}
		err := filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && q != p && (strings.HasSuffix(d.Name(), ".jbx.d") || strings.HasPrefix(d.Name(), ".")):
				return filepath.SkipDir
			case !d.IsDir() && strings.HasSuffix(d.Name(), ".jbx"):
				paths = append(paths, q)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
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
	// Recording: a run is still writing the tape (it has no end yet, and
	// is not torn).
	Recording bool `json:"recording,omitempty"`
}

// MarshalJSON writes a row that does not open as its tape, path and error
// alone (docs/json.md): the summary's fields would be zeros and made-up
// values (a start in year 1, the duration of what was read).
func (r lsRow) MarshalJSON() ([]byte, error) {
	if r.Error != "" {
		return json.Marshal(struct {
			Tape  string `json:"tape"`
			Path  string `json:"path"`
			Error string `json:"error"`
		}{r.Tape, r.Path, r.Error})
	}
	type row lsRow // without this method
	return json.Marshal(row(r))
}

// Run lists every *.jbx file in the folders, and the tapes named, newest
// first.
func (c *LsCmd) Run(ctx context.Context, env *Env) error {
	f := c.filter()
	var local []string
	for _, p := range c.Paths {
		loc, err := tapestore.Parse(p)
		switch {
		case errors.Is(err, tapestore.ErrNotURL), err == nil && loc.Name != "":
			local = append(local, p) // a path, or one tape in a store, read in place
		case err != nil:
			return withCode(ExitUsage, err)
		default:
			if err := lsStore(ctx, env, p, c, f); err != nil {
				return err
			}
		}
	}
	if len(local) == 0 {
		return nil
	}
	expand := expandTapes
	if c.Recursive {
		expand = expandTree
	}
	paths, err := expand(local)
	if err != nil {
		return err
	}
	rows := make([]lsRow, 0, len(paths))
	for _, p := range paths {
		if r := summarizeFile(env.remote(), p); f.keep(r.Name, r.Started, r.Tags) {
			rows = append(rows, r)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Started.After(rows[j].Started) })
	if f.Limit > 0 && len(rows) > f.Limit {
		rows = rows[:f.Limit]
	}
	if c.JSON {
		if err := writeJSON(env.Stdout, rows); err != nil {
			return err
		}
		return unreadRows(rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(env.Stdout, "no tapes%s in %s\n", f.words(), strings.Join(local, ", "))
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
			fmt.Fprintf(env.Stdout, "DAMAGED %s: %s\n", termtext.Escape(r.Path), timeline.OneLine(r.Damage, 0))
		}
		if r.Breaker != nil {
			fmt.Fprintf(env.Stdout, "TRIPPED %s: %s\n", termtext.Escape(r.Tape), timeline.OneLine(r.Breaker.Reason, 0))
		}
	}
	return unreadRows(rows)
}

// unreadRows is exit 3 when a tape listed does not read (not a tape, a
// frame that does not decode), naming them, after the listing of the
// others.
func unreadRows(rows []lsRow) error {
	var unread []string
	for _, r := range rows {
		if r.Error != "" {
			unread = append(unread, termtext.Escape(r.Path))
		}
	}
	if len(unread) == 0 {
		return nil
	}
	return withCode(ExitBadTape, fmt.Errorf("%d of %d tapes do not read: %s", len(unread), len(rows), strings.Join(unread, ", ")))
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
	r.Path = path // a summary that failed part way has none
	if err != nil {
		r.Error = err.Error()
	}
	if tapestore.IsURL(path) {
		// A store's tape was verified whole before upload (ls URL says
		// so, and marks one sent damaged): checking every record again
		// here fetched all of it (33 MB for one row), where the summary
		// reads a few ranges.
		return r
	}
	_, err = t.Verify(tapefmt.VerifyOptions{})
	r.Recording = t.Recovered() != nil && tapefmt.Recording(path)
	if rec := t.Recovered(); rec != nil && !r.Recording {
		// Torn (cut short, its footer gone) fails verify --quick, as
		// damaged; a tape still being recorded is not damaged.
		err = tornError(rec)
	}
	if err != nil {
		r.Damaged, r.Damage = true, err.Error()
	}
	return r
}

func (r lsRow) line() string {
	name := termtext.Escape(r.Tape)
	if r.Error != "" {
		return fmt.Sprintf("%s\t-\t-\t-\t-\t-\t-\tunreadable: %s\t", name, termtext.Sanitize(r.Error))
	}
	exit := r.ExitText()
	switch {
	case r.Recording:
		exit = "recording"
	case r.Recovered != nil:
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
	if r.Fork != nil {
		// The cost is the fork's whole timeline's, as the turntable
		// shows it; what it spent is what its breaker counted.
		cost += " (" + approx + breaker.USD(r.Fork.Spent) + " spent)"
	}
	parent := "-"
	if r.Parent != nil {
		parent = fmt.Sprintf("%s@%d", r.Parent.Tape[:min(12, len(r.Parent.Tape))], r.Parent.Frame)
	}
	// The exit's signal, the trip's rule and the parent are the tape's
	// words: a hostile tape's escape sequences reached the terminal.
	exit, parent = termtext.Sanitize(exit), termtext.Sanitize(parent)
	return fmt.Sprintf("%s\t%s\t%s\t%d\t%d\t%s%d\t%s\t%s\t%s", name, r.Started.Local().Format("2006-01-02 15:04:05"),
		timeline.Clock(r.Duration), r.Frames, r.Steps, approx, r.Usage.Total(), cost, exit, parent)
}
