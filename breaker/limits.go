package breaker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// Limits are what trips the breaker; a zero field is no limit.
type Limits struct {
	MaxCost           float64 // dollars for the whole run
	MaxTokensPerMin   float64 // tokens (input and output) over the last minute
	MaxCostPerMin     float64 // dollars over the last minute
	MaxRepeat         int     // the same tool action (tool, arguments, result), or an A,B cycle, seen this many times
	MaxSemanticRepeat int     // answers that say the same thing (near-duplicate text, equal code) this many times
	// UnknownModelRate prices a model without a price, in dollars per
	// million tokens, input and output alike. Without it, such a model
	// trips a breaker that has a limit in dollars.
	UnknownModelRate float64
	// Agents are limits of their own for each agent of a multi-agent run,
	// by the name its requests carry (llmwire.AgentHeader); the run's
	// limits hold for all of them together.
	Agents map[string]Limits
	// Tracks are limits for runs by their name (a track is a named agent
	// run: record --name, or the script's name); Track applies them.
	Tracks map[string]Limits
	// TripAll makes a trip of an agent's own limits refuse every agent's
	// calls and stop the run, as a trip of the run's limits does; without
	// it only that agent's calls are refused.
	TripAll bool
}

// Finite reports whether v is a limit: a finite number above 0 (NaN,
// infinities, zero and negatives are not).
func Finite(v float64) bool { return v > 0 && !math.IsInf(v, 1) }

// Track is the limits for a run named name: the track's own keys replace
// the run-wide ones, its agents join (and replace, by name) the run-wide
// agents. A name with no track gets the run-wide limits.
func (l Limits) Track(name string) Limits {
	t, ok := l.Tracks[name]
	out := l
	out.Tracks = nil
	if !ok {
		return out
	}
	pick := func(dst *float64, v float64) {
		if v != 0 {
			*dst = v
		}
	}
	pick(&out.MaxCost, t.MaxCost)
	pick(&out.MaxTokensPerMin, t.MaxTokensPerMin)
	pick(&out.MaxCostPerMin, t.MaxCostPerMin)
	pick(&out.UnknownModelRate, t.UnknownModelRate)
	if t.MaxRepeat != 0 {
		out.MaxRepeat = t.MaxRepeat
	}
	out.TripAll = out.TripAll || t.TripAll
	if t.MaxSemanticRepeat != 0 {
		out.MaxSemanticRepeat = t.MaxSemanticRepeat
	}
	if len(t.Agents) > 0 {
		out.Agents = make(map[string]Limits, len(l.Agents)+len(t.Agents))
		for n, a := range l.Agents {
			out.Agents[n] = a
		}
		for n, a := range t.Agents {
			out.Agents[n] = a
		}
	}
	for n, a := range out.Agents {
		a.UnknownModelRate = out.UnknownModelRate
		out.Agents[n] = a
	}
	return out
}

// Empty reports whether no limit is set, for the run, any agent or any
// track.
func (l Limits) Empty() bool {
	return l.own() && len(l.Agents) == 0 && len(l.Tracks) == 0
}

// own reports whether the limits of their own (not their agents') are
// all unset.
func (l Limits) own() bool {
	return l.MaxCost == 0 && l.MaxTokensPerMin == 0 && l.MaxCostPerMin == 0 && l.MaxRepeat == 0 && l.MaxSemanticRepeat == 0
}

// config is the breaker config file: every key optional, and a key that is
// there must hold a positive number.
type config struct {
	MaxCost           *float64          `json:"max_cost_usd"`
	MaxTokensPerMin   *float64          `json:"max_tokens_per_min"`
	MaxCostPerMin     *float64          `json:"max_usd_per_min"`
	MaxRepeat         *int              `json:"max_repeat"`
	MaxSemanticRepeat *int              `json:"max_semantic_repeat"`
	UnknownModelRate  *float64          `json:"unknown_model_rate"`
	TripAll           bool              `json:"trip_all"`
	Agents            map[string]config `json:"agents"`
	Tracks            map[string]config `json:"tracks"`
}

// LoadConfig reads a breaker config file (JSON):
//
//	{"max_cost_usd": 0.50, "max_tokens_per_min": 20000, "max_usd_per_min": 0.10,
//	 "max_repeat": 3, "max_semantic_repeat": 3, "unknown_model_rate": 5, "trip_all": true,
//	 "agents": {"planner": {"max_cost_usd": 0.10}, "coder": {"max_repeat": 4}},
//	 "tracks": {"invoice-agent": {"max_cost_usd": 2, "agents": {"planner": {"max_cost_usd": 0.5}}}}}
//
// An unknown key, a value that is not a positive number or a malformed
// file is an error naming the file and the key. An agent's limits take
// the same keys but agents, tracks, unknown_model_rate and trip_all, which
// are the run's; a track's take the same keys but tracks.
func LoadConfig(path string) (Limits, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Limits{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c config
	if err := dec.Decode(&c); err != nil {
		return Limits{}, fmt.Errorf("%s: %w", path, err)
	}
	// One object: what follows it would be dropped without a word (a
	// second object's limits, or anything else).
	if _, err := dec.Token(); err != io.EOF {
		return Limits{}, fmt.Errorf("%s: more after the config's JSON object, at byte %d: one object holds every limit", path, dec.InputOffset())
	}
	l, err := c.run(path)
	if err != nil {
		return l, err
	}
	for name, t := range c.Tracks {
		where := fmt.Sprintf("%s: track %q", path, name)
		if t.Tracks != nil {
			return Limits{}, fmt.Errorf("%s: tracks do not nest", where)
		}
		tl, err := t.run(where)
		if err != nil {
			return Limits{}, err
		}
		if l.Tracks == nil {
			l.Tracks = map[string]Limits{}
		}
		l.Tracks[name] = tl
	}
	return l, nil
}

// run reads a run's level of the config: its own limits and its agents'.
func (c config) run(where string) (Limits, error) {
	l, err := c.limits(where)
	if err != nil {
		return l, err
	}
	l.TripAll = c.TripAll
	for name, a := range c.Agents {
		if strings.TrimSpace(name) == "" {
			// A call of no agent is not "" 's: such limits held nothing.
			return Limits{}, fmt.Errorf("%s: an agent without a name: agents are named as their turns and X-Jukebox-Agent headers name them", where)
		}
		if a.Agents != nil || a.Tracks != nil || a.UnknownModelRate != nil || a.TripAll {
			return Limits{}, fmt.Errorf("%s: agent %q: agents, tracks, unknown_model_rate and trip_all belong to the run", where, name)
		}
		al, err := a.limits(fmt.Sprintf("%s: agent %q", where, name))
		if err != nil {
			return Limits{}, err
		}
		if l.Agents == nil {
			l.Agents = map[string]Limits{}
		}
		al.UnknownModelRate = l.UnknownModelRate
		l.Agents[name] = al
	}
	return l, nil
}

// limits checks one level of the config (where names it in errors).
func (c config) limits(path string) (Limits, error) {
	var l Limits
	for _, f := range []struct {
		name string
		in   *float64
		out  *float64
	}{
		{"max_cost_usd", c.MaxCost, &l.MaxCost},
		{"max_tokens_per_min", c.MaxTokensPerMin, &l.MaxTokensPerMin},
		{"max_usd_per_min", c.MaxCostPerMin, &l.MaxCostPerMin},
		{"unknown_model_rate", c.UnknownModelRate, &l.UnknownModelRate},
	} {
		if f.in == nil {
			continue
		}
		if !Finite(*f.in) {
			return Limits{}, fmt.Errorf("%s: %s is %v: a limit must be a finite number above 0", path, f.name, *f.in)
		}
		*f.out = *f.in
	}
	for _, f := range []struct {
		name string
		in   *int
		out  *int
	}{{"max_repeat", c.MaxRepeat, &l.MaxRepeat}, {"max_semantic_repeat", c.MaxSemanticRepeat, &l.MaxSemanticRepeat}} {
		if f.in == nil {
			continue
		}
		if *f.in < 2 {
			return Limits{}, fmt.Errorf("%s: %s is %d: a repeat is seen at least twice", path, f.name, *f.in)
		}
		*f.out = *f.in
	}
	return l, nil
}

// ParseVelocity reads a velocity limit: tokens a minute ("20000"), or
// dollars a minute with a $ ("$0.50"; "/min" may follow either).
func ParseVelocity(s string) (tokens, dollars float64, err error) {
	v := strings.TrimSuffix(strings.TrimSpace(s), "/min")
	usd := strings.HasPrefix(v, "$")
	n, err := strconv.ParseFloat(strings.TrimPrefix(v, "$"), 64)
	switch {
	case err != nil:
		return 0, 0, fmt.Errorf("%q: want tokens a minute (20000) or dollars a minute ($0.50)", s)
	case !Finite(n):
		return 0, 0, fmt.Errorf("%s: a limit must be a finite number above 0", s)
	case usd:
		return 0, n, nil
	}
	return n, 0, nil
}

// EstimateTokens is the breaker's estimate of the tokens in a request
// body: about four bytes a token, as tokenizers give for English and JSON.
func EstimateTokens(body []byte) int64 { return int64(len(body)+3) / 4 }
