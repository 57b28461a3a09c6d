package main

import (
	"fmt"
	"strconv"

	"github.com/jukebox-os/jukebox/breaker"
	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/termtext"
)

// breakerFlags set the circuit breaker's limits on record and fork.
type breakerFlags struct {
	MaxCost           *float64 `placeholder:"USD" help:"Stop the run before the model call that could take its cost past USD dollars (the cost so far, the calls in flight and the most that call can cost: its input and its max_tokens, else the run's longest answer). Exit 7."`
	MaxVelocity       string   `placeholder:"RATE" help:"Stop the run when it spends faster than RATE over the last minute: tokens a minute (20000) or dollars a minute with a $ ('$0.50'). Exit 7."`
	MaxRepeat         *int     `placeholder:"N" help:"Stop the run when the agent makes the same tool call with the same result the N-th time, or alternates between two tool calls N times. Exit 7."`
	MaxSemanticRepeat *int     `placeholder:"N" help:"Stop the run when the model's answers say the same thing (or write the same code) the N-th time; answers whose numbers advance are progress (docs/breaker.md). Exit 7."`
	BreakerConfig     string   `type:"existingfile" placeholder:"FILE" help:"Breaker limits as JSON: max_cost_usd, max_tokens_per_min, max_usd_per_min, max_repeat, max_semantic_repeat (answers that say the same thing, or the same code), unknown_model_rate; agents and tracks (runs by --name) of their own (see docs/breaker.md). Flags given as well win."`
	UnknownModelRate  *float64 `placeholder:"USD" help:"Price of a model that has no price, in dollars per million tokens (input and output alike); without it such a model stops a run that has a limit in dollars."`
	TripAll           bool     `help:"When an agent passes its own limits (--breaker-config agents), refuse every agent's calls and stop the run, not that agent's calls alone."`
	// config is --breaker-config read once (keepConfig), for a command
	// that starts many runs.
	config *breaker.Limits
}

// keepConfig reads --breaker-config now, once: the runs a reused server
// starts later take their limits from what it held at start, and whoever
// wrote the file (the Python SDK, in its private folder) may remove it.
func (f *breakerFlags) keepConfig() (err error) {
	f.config, err = f.configLimits()
	return err
}

// configLimits are --breaker-config's limits, as kept or read now; nil
// without the flag.
func (f breakerFlags) configLimits() (*breaker.Limits, error) {
	if f.config != nil || f.BreakerConfig == "" {
		return f.config, nil
	}
	l, err := breaker.LoadConfig(f.BreakerConfig)
	if err != nil {
		return nil, fmt.Errorf("--breaker-config %w", err)
	}
	return &l, nil
}

// limits are the limits the flags and the config file give a run named
// track (the config's track of that name, if any, over its run-wide
// limits; flags over both); a limit that is not a finite number above 0
// (NaN, Inf, zero, negative), a velocity that does not read or a
// malformed file is an error naming the flag.
func (f breakerFlags) limits(track string) (breaker.Limits, error) {
	var l breaker.Limits
	config, err := f.configLimits()
	if err != nil {
		return l, err
	}
	if config != nil {
		l = config.Track(track)
	}
	set := func(name string, v *float64, dst *float64) error {
		switch {
		case v == nil:
		case !breaker.Finite(*v):
			return fmt.Errorf("--%s %v: a limit must be a finite number above 0", name, *v)
		default:
			*dst = *v
		}
		return nil
	}
	if err := set("max-cost", f.MaxCost, &l.MaxCost); err != nil {
		return l, err
	}
	if err := set("unknown-model-rate", f.UnknownModelRate, &l.UnknownModelRate); err != nil {
		return l, err
	}
	if f.MaxVelocity != "" {
		tokens, usd, err := breaker.ParseVelocity(f.MaxVelocity)
		if err != nil {
			return l, fmt.Errorf("--max-velocity %w", err)
		}
		if tokens > 0 {
			l.MaxTokensPerMin = tokens
		} else {
			l.MaxCostPerMin = usd
		}
	}
	l.TripAll = l.TripAll || f.TripAll
	if f.MaxRepeat != nil {
		if *f.MaxRepeat < 2 {
			return l, fmt.Errorf("--max-repeat %d: a repeat is seen at least twice", *f.MaxRepeat)
		}
		l.MaxRepeat = *f.MaxRepeat
	}
	if f.MaxSemanticRepeat != nil {
		if *f.MaxSemanticRepeat < 2 {
			return l, fmt.Errorf("--max-semantic-repeat %d: a repeat is seen at least twice", *f.MaxSemanticRepeat)
		}
		l.MaxSemanticRepeat = *f.MaxSemanticRepeat
	}
	return l, nil
}

// validate checks the limits before anything starts.
func (f breakerFlags) validate() error {
	_, err := f.limits("")
	return err
}

// tripExit is exit 7 when the circuit breaker stopped the run: ahead of
// the agent's own code, which is still printed.
func tripExit(res *engine.Result) error {
	if res == nil || res.Breaker == nil {
		return nil
	}
	// Forked there, the first call at or after the trip's last frame goes
	// live: the one refused, or the one after the answer that tripped.
	tape, frame := "TAPE", "N"
	if res.Tape != "" && len(res.Breaker.Evidence) > 0 {
		tape, frame = termtext.Quote(res.Tape), strconv.FormatUint(res.Breaker.Evidence[len(res.Breaker.Evidence)-1], 10)
	}
	return withCode(ExitTripped, fmt.Errorf("circuit breaker tripped (%s): %s (exit %d, ahead of the agent's %s); continue with jukebox fork %s --frame %s and a raised limit or another model",
		res.Breaker.Rule, res.Breaker.Reason, ExitTripped, agentEnd(res.End), tape, frame))
}
