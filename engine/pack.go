package engine

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// ErrNothingToPack: Pack was given a tape that is no fork, or a fork
// packed already (a usage error).
var ErrNothingToPack = errors.New("not a fork, or packed already: it has nothing to pack")

// Pack writes a fork as one self-contained tape: the fork's run.start
// (marked packed), the parent's frames before the fork frame as they were
// recorded, then the fork's frames from its fork call on. The parent is
// found at the path the fork recorded, unless parentPath is given; its
// chain head must match the one the fork names. remote opens a parent a
// URL names (a store's tape); nil reads files only.
func Pack(forkPath, parentPath, out string, remote tapefmt.RemoteOpener) (frames uint64, err error) {
	fork, err := tapefmt.Open(forkPath)
	if err != nil {
		return 0, err
	}
	defer fork.Close()
	start, err := FirstRunStart(fork)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", forkPath, err)
	}
	if start.Parent == nil || start.Parent.Packed {
		return 0, fmt.Errorf("%s: %w", forkPath, ErrNothingToPack)
	}
	named := parentPath == ""
	if named {
		parentPath = start.Parent.Path
	}
	parent, err := tapefmt.OpenWith(parentPath, remote)
	if beside := filepath.Join(filepath.Dir(forkPath), filepath.Base(parentPath)); err != nil && named && !tapefmt.IsRemote(parentPath) && beside != parentPath {
		// Moved with its fork (the path is where the parent was, a
		// hint; before it was absolute, relative to where jukebox ran).
		if p, berr := tapefmt.OpenWith(beside, remote); berr == nil {
			parent, parentPath, err = p, beside, nil
		}
	}
	if err != nil {
		return 0, fmt.Errorf("the parent named by %s: %w", forkPath, err)
	}
	defer parent.Close()
	if parent.Head().String() != start.Parent.Tape {
		return 0, fmt.Errorf("%s is not the parent of %s: its chain head is %s, the fork names %s", parentPath, forkPath, parent.Head().Short(), start.Parent.Tape)
	}
	err = tapefmt.CreateWith(out, tapefmt.Options{Created: fork.Created()}, func(w *tapefmt.Writer) error {
		err := packFrames(w, parent, fork, *start)
		frames = w.Len()
		return err
	})
	return frames, err
}

// parentPath is the path a fork or a replay's tape names its parent by:
// absolute for a file, so that it names it from any folder; a store's
// URL as it is.
func parentPath(p string) string {
	if tapefmt.IsRemote(p) {
		return p
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func packFrames(w *tapefmt.Writer, parent, fork *tapefmt.Tape, start tapefmt.RunStart) error {
	ref := *start.Parent
	ref.Packed = true
	start.Parent = &ref
	first, err := fork.Frame(0)
	if err != nil {
		return err
	}
	if _, err := w.AppendAt(first.Time, first.Stream, start); err != nil {
		return err
	}
	// The parent answers the calls made before the fork frame: its frames
	// up to there, and the answers to those calls that arrived after it.
	preqs, err := requestFrames(parent)
	if err != nil {
		return err
	}
	prefix := requestsBefore(preqs, ref.Frame)
	err = copyFrames(w, parent, 1, func(i int, f tapefmt.Frame) bool {
		return i < int(ref.Frame) || answersBefore(f, uint64(prefix))
	})
	if err != nil {
		return err
	}
	freqs, err := requestFrames(fork)
	if err != nil {
		return err
	}
	if prefix >= len(freqs) {
		return errors.New("the fork never reached its fork frame: nothing of its own to pack")
	}
	return copyFrames(w, fork, int(freqs[prefix]), func(_ int, f tapefmt.Frame) bool { return !answersBefore(f, uint64(prefix)) })
}

// copyFrames copies the frames of t from frame from on that keep accepts.
func copyFrames(w *tapefmt.Writer, t *tapefmt.Tape, from int, keep func(int, tapefmt.Frame) bool) error {
	for i := from; i < t.Len(); i++ {
		f, err := t.Frame(i)
		if err != nil {
			return err
		}
		if keep(i, f) {
			if err := tapefmt.CopyFrame(w, t, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// answersBefore reports whether f is the response to one of the first
// calls model calls.
func answersBefore(f tapefmt.Frame, calls uint64) bool {
	if f.Kind != tapefmt.KindLLMResponse {
		return false
	}
	p, err := f.Decode()
	r, ok := p.(*tapefmt.LLMResponse)
	return err == nil && ok && r.Call < calls
}
