package tapestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/jukebox-os/jukebox/timeline"
)

// Entry is a tape in a store, as ls lists it: from the listing and the
// summary object beside it. A tape another tool put there has no summary
// object: Record is nil, and the tape says what it is when opened.
type Entry struct {
	Key      string    `json:"key"`
	URL      string    `json:"url"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
	Record   *Record   `json:"record,omitempty"`
	// RecordError says why the summary object did not read.
	RecordError string `json:"record_error,omitempty"`
}

// listWorkers is how many summary objects are read at once.
const listWorkers = 16

// List lists the tapes of the store, in key order, with their summaries,
// read side by side (no tape is downloaded).
func (s *Store) List(ctx context.Context) ([]Entry, error) {
	var out []Entry
	summaries := map[string]bool{}
	it := s.b.List("", "/")
	for {
		o, err := next(ctx, "LIST "+s.Loc.String(), it)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, s.wrap("", err)
		}
		switch {
		case o.IsDir:
		case tapeKey(o.Key):
			out = append(out, Entry{Key: o.Key, URL: s.Loc.TapeURL(o.Key), Size: o.Size, Modified: o.ModTime})
		case strings.HasSuffix(o.Key, TapeExt+".summary.json"):
			summaries[o.Key] = true
		}
	}
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range min(listWorkers, len(out)) {
		wg.Go(func() {
			for i := range jobs {
				e := &out[i]
				b, err := readAll(ctx, "GET "+s.Loc.TapeURL(summaryKey(e.Key)), s.b, summaryKey(e.Key))
				if err != nil {
					e.RecordError = s.wrap(summaryKey(e.Key), err).Error()
					continue
				}
				var r Record
				if err := json.Unmarshal(b, &r); err != nil {
					e.RecordError = "the summary object does not read: " + err.Error()
					continue
				}
				e.Record = &r
			}
		})
	}
	for i := range out {
		if summaries[summaryKey(out[i].Key)] {
			jobs <- i
		}
	}
	close(jobs)
	wg.Wait()
	return out, ctx.Err()
}

// RecordOf reads the summary object of the tape a URL names: what was
// known of it at upload (nil and no error for a tape another tool put
// there, which has none).
func RecordOf(ctx context.Context, raw string) (*Record, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout) // the turntable waits on it
	defer cancel()
	loc, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	s, err := Open(ctx, loc)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	b, err := s.b.ReadAll(ctx, summaryKey(loc.Name))
	if codeOf(err) == codeNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, s.wrap(summaryKey(loc.Name), err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: the summary object does not read: %w", loc.TapeURL(summaryKey(loc.Name)), err)
	}
	return &r, nil
}

// Kin lists the tapes of the store the tape URL lies in as kin, from their
// summary objects alone (no tape is read): where the turntable looks for
// the forks of a store's tape. A tape with no summary object (put there by
// another tool) is left out: what it was forked from is not known without
// reading it.
func Kin(ctx context.Context, tapeURL string) ([]timeline.Kin, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*requestTimeout) // a store that answers nothing ends the search
	defer cancel()
	loc, err := Parse(tapeURL)
	if err != nil {
		return nil, err
	}
	s, err := Open(ctx, loc.Store())
	if err != nil {
		return nil, err
	}
	defer s.Close()
	entries, _, err := s.Index(ctx)
	if errors.Is(err, ErrNoIndex) || errors.Is(err, ErrBadIndex) {
		entries, err = s.List(ctx)
	}
	if err != nil {
		return nil, err
	}
	var kin []timeline.Kin
	for _, e := range entries {
		r := e.Record
		if r == nil || r.Summary == nil {
			continue
		}
		k := timeline.Kin{Path: e.URL, Head: r.Head, Parent: r.Summary.Parent, Frames: r.Summary.Frames}
		k.End = r.Summary.Exit
		kin = append(kin, k)
	}
	return kin, nil
}
