package main

import (
	"fmt"

	"github.com/jukebox-os/jukebox/breaker"
	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// BreakerCmd runs a recorded run through the circuit breaker's limits.
type BreakerCmd struct {
	Tape string `arg:"" type:"tape" help:"The tape of a recorded run (a file, or a tape in a store)."`
	breakerFlags
	JSON bool `help:"Print the outcome as JSON."`
}

// Validate needs limits that make sense.
func (c *BreakerCmd) Validate() error {
	return c.breakerFlags.validate()
}

// breakerCheck is the JSON outcome.
type breakerCheck struct {
	Tape    string        `json:"tape"`
	Tripped bool          `json:"tripped"`
	Breaker *breaker.Trip `json:"breaker,omitempty"`
}

// Run says whether, where and why the run would have tripped: exit 7 when
// it would, so that CI can hold recorded runs to limits.
func (c *BreakerCmd) Run(env *Env) error {
	t, err := env.openTape(c.Tape)
	if err != nil {
		return err
	}
	defer t.Close()
	start, err := engine.FirstRunStart(t)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Tape, err)
	}
	name := tapeName(start)
	l, err := c.limits(name)
	if err != nil {
		return err
	}
	if l.Empty() {
		return withCode(ExitUsage, fmt.Errorf("no limit to check for run %q: give --max-cost, --max-velocity, --max-repeat, --max-semantic-repeat or --breaker-config (with limits for the run or its track)", name))
	}
	trip, err := engine.CheckBreaker(t, l)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Tape, err)
	}
	if c.JSON {
		if err := writeJSON(env.Stdout, breakerCheck{Tape: c.Tape, Tripped: trip != nil, Breaker: trip}); err != nil {
			return err
		}
	} else if trip == nil {
		fmt.Fprintf(env.Stdout, "%s would not trip under these limits\n", c.Tape)
		if f, rule := recordedTrip(t); f >= 0 {
			// What it holds is all it says: the run went no further.
			fmt.Fprintf(env.Stdout, "  (its own breaker stopped the run at frame %d (%s): the calls it would have made after are not on the tape)\n", f, rule)
		}
	} else {
		fmt.Fprintf(env.Stdout, "%s would trip at frame %d (%s): %s\n  cost %s, %d tokens so far; evidence: frames %s\n",
			c.Tape, trip.Evidence[len(trip.Evidence)-1], trip.Rule, timeline.OneLine(trip.Reason, 0), breaker.USD(trip.Cost), trip.Tokens, timeline.FrameList(trip.Evidence))
	}
	if trip != nil {
		return withCode(ExitTripped, errSilent)
	}
	return nil
}

// recordedTrip is the frame and rule of the trip that stopped the run on
// its tape (a breaker.trip frame), -1 when none did.
func recordedTrip(t *tapefmt.Tape) (int64, string) {
	for f, err := range t.Frames(tapefmt.KindBreakerTrip) {
		if err != nil {
			return -1, ""
		}
		p, err := f.Decode()
		if err != nil {
			return -1, ""
		}
		if bt, ok := p.(*tapefmt.BreakerTrip); ok {
			return int64(f.Seq), bt.Rule
		}
	}
	return -1, ""
}
