package timeline

import (
	"bytes"
	"context"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// sweepChunk is how many frames one worker of a sweep reads at a time:
// the grain at which a sweep reports what it found.
const sweepChunk = 512

// Sweep is what a search over the whole tape has found so far, in the
// order it reads: the frames after From to the end, then from the start
// up to From (wrapping as Search does).
type Sweep struct {
	From    int // the search starts after this frame
	Scanned int // frames read so far, in the sweep's order
	Len     int // frames in all
	// After and Before are the matches after From and at or before it,
	// each in frame order (at most Limit in all; Total counts on).
	After, Before []int
	Total         int
	Unreadable    int
	First         *FrameError // the first frame that did not read in full
}

// Done reports whether the sweep read every frame.
func (s *Sweep) Done() bool { return s.Scanned >= s.Len }

// FirstHit is the first match after From, wrapping, or -1 when none is
// found yet.
func (s *Sweep) FirstHit() int {
	switch {
	case len(s.After) > 0:
		return s.After[0]
	case len(s.Before) > 0:
		return s.Before[0]
	}
	return -1
}

// SweepSearch reads every frame once for query, as Search would, starting
// after from and wrapping: in chunks, on as many goroutines as there are
// CPUs, so that the first match, "no match" and the count of every match
// all come from one pass. report is called from one goroutine with what
// has been found so far, in the sweep's order, after each chunk (the
// Sweep is the caller's to keep); the last report has Done. At most limit
// matches are listed. It returns ctx.Err() when cancelled.
func (tl *Timeline) SweepSearch(ctx context.Context, query string, from, limit int, report func(Sweep)) error {
	q := ParseQuery(query)
	n := tl.Len()
	if n == 0 || q.Empty() {
		report(Sweep{From: from, Len: 0})
		return nil
	}
	from = max(0, min(from, n-1))
	chunks := (n + sweepChunk - 1) / sweepChunk
	type result struct {
		frames     []int
		unreadable int
		first      *FrameError
	}
	results := make([]chan result, chunks)
	for i := range results {
		results[i] = make(chan result, 1)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	workers := min(runtime.GOMAXPROCS(0), chunks)
	for range workers {
		go func() {
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks || ctx.Err() != nil {
					return
				}
				var r result
				// The chunk's frames, in one or (where it wraps) two
				// stretches of the file.
				lo, hi := c*sweepChunk, min(n, (c+1)*sweepChunk)
				a := (from + 1 + lo) % n
				spans := [][2]int{{a, min(n, a+hi-lo)}}
				if rest := hi - lo - (spans[0][1] - a); rest > 0 {
					spans = append(spans, [2]int{0, rest})
				}
				for _, sp := range spans {
					tl.t.FramesIn(sp[0], sp[1], func(i int, f tapefmt.Frame, err error) bool {
						ok, bad := tl.matchFrame(i, q, func() (tapefmt.Frame, error) { return f, err })
						if bad != nil {
							tl.noteDamage(bad)
							if r.unreadable++; r.first == nil {
								r.first = bad
							}
						}
						if ok {
							r.frames = append(r.frames, i)
						}
						return true
					})
				}
				results[c] <- r
			}
		}()
	}
	s := Sweep{From: from, Len: n}
	for c := range chunks {
		var r result
		select {
		case <-ctx.Done():
			return ctx.Err()
		case r = <-results[c]:
		}
		for _, i := range r.frames {
			if s.Total++; s.Total > limit {
				continue
			}
			if i > from {
				s.After = append(s.After, i)
			} else {
				s.Before = append(s.Before, i)
			}
		}
		if s.Unreadable += r.unreadable; s.First == nil {
			s.First = r.first
		}
		s.Scanned = min(n, (c+1)*sweepChunk)
		report(s.copy())
	}
	return nil
}

// copy is s as it stands: the lists only grow, past the length a copy
// sees, so a copy shares them safely.
func (s Sweep) copy() Sweep {
	s.After, s.Before = slices.Clip(s.After), slices.Clip(s.Before)
	return s
}

// What a search keeps of the frames' text: a frame's text up to
// maxCachedText bytes, and maxTextCache bytes in all (on the
// 100,000-frame benchmark tape, about 30 MB: every frame).
const (
	maxCachedText = 4 << 10
	maxTextCache  = 64 << 20
)

// lowerText is frame i's searched text, lower-cased: kept from an
// earlier search, or read (its record from read) and kept when it is
// small and reads in full.
func (tl *Timeline) lowerText(i int, read func() (tapefmt.Frame, error)) ([]byte, *FrameError) {
	tl.mu.Lock()
	if i < len(tl.texts) && tl.texts[i] != nil {
		t := tl.texts[i]
		tl.mu.Unlock()
		return t, nil
	}
	tl.mu.Unlock()
	text, bad := tl.text(i, read)
	lower := bytes.ToLower(text)
	if bad != nil || len(lower) > maxCachedText {
		return lower, bad
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.texts == nil {
		tl.texts = make([][]byte, tl.Len())
	}
	if i < len(tl.texts) && tl.textBytes+len(lower) <= maxTextCache {
		tl.texts[i] = slices.Clip(lower)
		tl.textBytes += len(lower)
	}
	return lower, nil
}
