package breaker

import "fmt"

// act records a completed tool action and trips on repeats (the same
// action seen MaxRepeat times with no new action between) and
// oscillation.
func (b *Breaker) act(p pendingUse, r ToolResult, seq uint64) *Trip {
	shape := p.Name + "\x00" + canonicalJSON(p.Args)
	a := action{key: shape + "\x00" + r.Content, shape: shape, seq: seq}
	b.actions = append(b.actions, a)
	if !b.known[a.key] {
		b.known[a.key] = true
		// Something new came back: the run moved on, and repeats are
		// counted from here (a wait between polls that move on is not a
		// loop).
		clear(b.seen)
	}
	b.seen[a.key] = append(b.seen[a.key], p.seq, seq)
	if n := b.l.MaxRepeat; n > 0 {
		if frames := b.seen[a.key]; len(frames)/2 >= n {
			return &Trip{Rule: RuleRepeat, Evidence: frames,
				Reason: fmt.Sprintf("tool %s called with the same arguments and the same result %d times (%s)", p.Name, len(frames)/2, oneLine(p.Args))}
		}
		if frames, ok := b.oscillating(n); ok {
			prev := b.actions[len(b.actions)-2]
			return &Trip{Rule: RuleOscillation, Evidence: frames,
				Reason: fmt.Sprintf("the agent alternated between two tool calls %d times (%s and %s)", n, shapeText(prev.shape), shapeText(a.shape))}
		}
	}
	return nil
}

// oscillating reports whether the last 2n actions alternate between two
// different calls (tool and arguments) with the frames that show it,
// unless one of the two got a new result each time: a poll between waits
// that moves on is progress, an agent undoing and redoing is not.
func (b *Breaker) oscillating(n int) ([]uint64, bool) {
	if len(b.actions) < 2*n {
		return nil, false
	}
	last := b.actions[len(b.actions)-2*n:]
	if last[0].shape == last[1].shape {
		return nil, false
	}
	var frames []uint64
	for i, a := range last {
		if a.shape != last[i%2].shape {
			return nil, false
		}
		frames = append(frames, a.seq)
	}
	if moving(last, 0) || moving(last, 1) {
		return nil, false
	}
	return frames, true
}

// moving reports whether the actions at even (odd: from 1) places of an
// alternation each got a result the call had not got before in it.
func moving(acts []action, from int) bool {
	seen := map[string]bool{}
	for i := from; i < len(acts); i += 2 {
		if seen[acts[i].key] {
			return false
		}
		seen[acts[i].key] = true
	}
	return true
}
