package main

import (
	"github.com/jukebox-os/jukebox/tapestore"
	"github.com/jukebox-os/jukebox/timeline"
)

// storeEntry is a store's tape as `ls URL --json` prints it: its record
// with the run's summary as `ls --json` prints a tape here, the cost
// worked out now from the stored tokens (tapestore.Summary.Timeline).
type storeEntry struct {
	tapestore.Entry
	Record *storeRecord `json:"record,omitempty"`
}

type storeRecord struct {
	tapestore.Record
	Summary *timeline.Summary `json:"summary,omitempty"`
}

// storeEntries are the entries as `ls URL --json` prints them.
func storeEntries(entries []tapestore.Entry) []storeEntry {
	out := make([]storeEntry, len(entries))
	for i, e := range entries {
		out[i].Entry = e
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
