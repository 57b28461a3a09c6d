package engine

import (
	"errors"
	"fmt"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Pack writes a fork as one self-contained tape: the fork's run.start
// (marked packed), the parent's frames before the fork frame as they were
// recorded, then the fork's frames from its fork call on. The parent is
// found at the path the fork recorded, unless parentPath is given; its
// chain head must match the one the fork names.
func Pack(forkPath, parentPath, out string) (frames uint64, err error) {
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
		return 0, fmt.Errorf("%s is not a fork, or is packed already: it has nothing to pack", forkPath)
	}
	if parentPath == "" {
		parentPath = start.Parent.Path
	}
	parent, err := tapefmt.Open(parentPath)
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
	calls := 0 // model calls the parent made before the fork frame
	for i := 1; i < int(ref.Frame); i++ {
		f, err := parent.Frame(i)
		if err != nil {
			return err
		}
		if f.Kind == tapefmt.KindLLMRequest {
			calls++
		}
		if err := tapefmt.CopyFrame(w, parent, f); err != nil {
			return err
		}
	}
	from, err := nthRequest(fork, calls)
	if err != nil {
		return err
	}
	for i := from; i < fork.Len(); i++ {
		f, err := fork.Frame(i)
		if err == nil {
			err = tapefmt.CopyFrame(w, fork, f)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// nthRequest is the frame of the n-th (from 0) llm.request of a tape.
func nthRequest(t *tapefmt.Tape, n int) (int, error) {
	for f, err := range t.Frames(tapefmt.KindLLMRequest) {
		if err != nil {
			return 0, err
		}
		if n == 0 {
			return int(f.Seq), nil
		}
		n--
	}
	return 0, errors.New("the fork never reached its fork frame: nothing of its own to pack")
}
