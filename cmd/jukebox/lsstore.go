package main

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/tapestore"
	"github.com/jukebox-os/jukebox/timeline"
)

// storeEntry is a store's tape as `ls URL --json` prints it: its record
// with the run's summary as `ls --json` prints a tape here, the cost
// worked out now from the stored tokens (tapestore.Summary.Timeline).
type storeEntry struct {
	tapestore.Entry
	// Folder is the folder below the store URL listed that holds the tape
	// (ls --recursive), "" for the store itself.
	Folder string       `json:"folder,omitempty"`
	Record *storeRecord `json:"record,omitempty"`
}

type storeRecord struct {
	tapestore.Record
	Summary *timeline.Summary `json:"summary,omitempty"`
}

// storeTape is a tape of a store listed, and the folder it lies in.
type storeTape struct {
	tapestore.Entry
	folder string
}

// started is when the tape's run started, else when it was put there.
func (e storeTape) started() time.Time {
	if e.Record != nil && e.Record.Summary != nil {
		return e.Record.Summary.Started
	}
	return e.Modified
}

// storeEntries are the entries as `ls URL --json` prints them.
func storeEntries(entries []storeTape) []storeEntry {
	out := make([]storeEntry, len(entries))
	for i, e := range entries {
		out[i].Entry, out[i].Folder = e.Entry, e.folder
		if e.Record == nil {
			continue
		}
		out[i].Record = &storeRecord{Record: *e.Record}
		if e.Record.Summary != nil {
			s := e.Record.Summary.Timeline(e.URL)
			out[i].Record.Summary = &s
		}
	}
	return out
}

// Bounds of ls --recursive.
const (
	maxStoreDepth   = 8
	maxStoreFolders = 10000
)

// lsStore lists a store from its index (tapestore.Index), or from each
// tape's summary object when it has none or with --full, without
// downloading tapes; --recursive lists its folders too.
func lsStore(ctx context.Context, env *Env, raw string, c *LsCmd, f lsFilter) error {
	loc, err := tapestore.Parse(raw)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	type folder struct {
		loc   tapestore.Location
		rel   string
		depth int
	}
	var tapes []storeTape
	var unindexed []string
	queue := []folder{{loc: loc}}
	for seen := 0; len(queue) > 0; seen++ {
		if seen == maxStoreFolders {
			return fmt.Errorf("%s: more than %d folders below it: name a folder further down", raw, maxStoreFolders)
		}
		fo := queue[0]
		queue = queue[1:]
		s, err := tapestore.Open(ctx, fo.loc)
		if err != nil {
			return err
		}
		entries, _, err := s.Index(ctx)
		if errors.Is(err, tapestore.ErrBadIndex) && !c.Full {
			// Read from the tapes' summaries, as if there were no index.
			fmt.Fprintf(env.Stderr, "jukebox: %s (read from each tape's summary instead; `jukebox reindex %s` writes the index again)\n",
				termtext.Sanitize(err.Error()), fo.loc)
			entries, err = s.List(ctx)
		} else if errors.Is(err, tapestore.ErrNoIndex) || c.Full {
			if entries, err = s.List(ctx); err == nil && len(entries) > 0 && !c.Full {
				unindexed = append(unindexed, fo.loc.String())
			}
		}
		var dirs []string
		if err == nil && c.Recursive && fo.depth < maxStoreDepth {
			dirs, err = s.Folders(ctx)
		}
		s.Close()
		if err != nil {
			return err
		}
		for _, e := range entries {
			tapes = append(tapes, storeTape{Entry: e, folder: fo.rel})
		}
		for _, d := range dirs {
			if rel := fo.rel + d; !f.before(rel) {
				queue = append(queue, folder{loc: fo.loc.Sub(d), rel: rel, depth: fo.depth + 1})
			}
		}
	}
	for _, u := range unindexed {
		fmt.Fprintf(env.Stderr, "jukebox: %s has no index (its tapes were uploaded by an earlier jukebox or another tool): read one object per tape; `jukebox reindex %s` writes the index\n", u, u)
	}
	tapes = slices.DeleteFunc(tapes, func(e storeTape) bool {
		if e.Record == nil || e.Record.Summary == nil {
			return !f.keep("", e.Modified, nil)
		}
		return !f.keep(e.Record.Summary.Name, e.Record.Summary.Started, e.Record.Summary.Tags)
	})
	slices.SortStableFunc(tapes, func(a, b storeTape) int { return b.started().Compare(a.started()) })
	if f.Limit > 0 && len(tapes) > f.Limit {
		tapes = tapes[:f.Limit]
	}
	if c.JSON {
		return writeJSON(env.Stdout, storeEntries(tapes))
	}
	if len(tapes) == 0 {
		fmt.Fprintf(env.Stdout, "no tapes%s in %s\n", f.words(), raw)
		return nil
	}
	tagged := slices.ContainsFunc(tapes, func(e storeTape) bool {
		return e.Record != nil && e.Record.Summary != nil && len(e.Record.Summary.Tags) > 0
	})
	tw := table(env.Stdout)
	fmt.Fprintln(tw, "TAPE\tSTARTED\tDURATION\tCALLS\tTOKENS\tCOST\tEXIT\tPARENT\tVERIFIED"+tagsColumn(tagged, nil, true))
	for _, e := range tapes {
		name := timeline.OneLine(e.folder+strings.TrimSuffix(e.Key, tapestore.TapeExt), 0)
		if e.Record == nil || e.Record.Summary == nil {
			why := "no summary (not uploaded by jukebox)"
			if e.RecordError != "" {
				why = e.RecordError
			}
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t%s%s\n", name, timeline.OneLine(why, 0), tagsColumn(tagged, nil, false))
			continue
		}
		r := lsRow{Tape: name, Summary: e.Record.Summary.Timeline(e.URL)}
		verified := "yes"
		if !e.Record.Verified {
			verified = "NO: " + timeline.OneLine(e.Record.VerifyError, 0)
		}
		fields := strings.Split(r.line(), "\t")
		// name, started, duration, frames, steps, tokens, cost, exit, parent
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s%s\n", fields[0], fields[1], fields[2], r.Calls, fields[5], fields[6], fields[7], fields[8], verified, tagsColumn(tagged, r.Tags, false))
	}
	return tw.Flush()
}

// lsFilter is what ls lists of the tapes it finds.
type lsFilter struct {
	Tags  tagFilter
	Since time.Time // zero: any time
	Name  string    // a glob of the run's name (path.Match); "": any
	Limit int       // 0: all
}

// keep reports whether a run of this name, start and tags is listed.
func (f lsFilter) keep(name string, started time.Time, tags map[string]string) bool {
	if !f.Since.IsZero() && started.Before(f.Since) {
		return false
	}
	if f.Name != "" {
		if ok, _ := path.Match(f.Name, name); !ok {
			return false
		}
	}
	return f.Tags.match(tags)
}

// words is f for "no tapes ... in DIR".
func (f lsFilter) words() string {
	var w []string
	if t := f.Tags.words(); t != "" {
		w = append(w, strings.TrimSpace(t))
	}
	if f.Name != "" {
		w = append(w, "named "+f.Name)
	}
	if !f.Since.IsZero() {
		w = append(w, "since "+f.Since.Local().Format("2006-01-02 15:04:05"))
	}
	if len(w) == 0 {
		return ""
	}
	return " " + strings.Join(w, ", ")
}

// datePart finds a day in a folder path: 2026-12-05, 2026/12/05 or
// date=2026-12-05 (Hive's partitions).
var datePart = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:^|/|=)(\d{4})[-/](\d{2})[-/](\d{2})(?:/|$)`) })

// before reports whether the folder rel names a day wholly before Since:
// ls --recursive --since skips it unread.
func (f lsFilter) before(rel string) bool {
	if f.Since.IsZero() {
		return false
	}
	m := datePart().FindStringSubmatch(rel)
	if m == nil {
		return false
	}
	day, err := time.Parse("2006-01-02", m[1]+"-"+m[2]+"-"+m[3])
	// The day in any time zone: it ends at most 14 hours after UTC's.
	return err == nil && day.Add(24*time.Hour+14*time.Hour).Before(f.Since)
}

// parseSince reads ls --since: a duration back from now (90m, 36h, 7d,
// 2w), a day (2026-12-01, local time) or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if n, unit := strings.TrimRight(s, "dw"), strings.TrimLeft(s, "0123456789"); unit == "d" || unit == "w" {
		var k int
		if _, err := fmt.Sscanf(n, "%d", &k); err == nil && k >= 0 {
			days := k
			if unit == "w" {
				days *= 7
			}
			return now.AddDate(0, 0, -days), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, withCode(ExitUsage, fmt.Errorf("--since %q: want a duration back from now (90m, 36h, 7d, 2w), a day (2026-12-01) or an RFC 3339 time", s))
}

// ReindexCmd writes a store's index.
type ReindexCmd struct {
	URL  string `arg:"" help:"The store, e.g. s3://BUCKET/PREFIX/."`
	JSON bool   `help:"Print the result as one JSON object."`
}

// Run reads every tape's summary object of the store and writes them as
// its index, replacing the index objects there before.
func (c *ReindexCmd) Run(ctx context.Context, env *Env) error {
	s, loc, err := openStore(ctx, c.URL)
	if err != nil {
		return err
	}
	defer s.Close()
	if loc.Name != "" {
		return withCode(ExitUsage, fmt.Errorf("%s names a tape: reindex takes its store, %s", c.URL, loc.Store()))
	}
	fmt.Fprintf(env.Stderr, "jukebox: reading every tape's summary object of %s…\n", c.URL)
	n, err := s.Reindex(ctx)
	if err != nil {
		return err
	}
	if c.JSON {
		return writeJSON(env.Stdout, struct {
			Store string `json:"store"`
			Tapes int    `json:"tapes"`
		}{c.URL, n})
	}
	fmt.Fprintf(env.Stdout, "indexed %d tapes of %s\n", n, c.URL)
	return nil
}
