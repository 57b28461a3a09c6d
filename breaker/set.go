package breaker

// Set is the breakers of a run: one for the run and, where Limits.Agents
// names limits for an agent, one for that agent's calls. A trip of the
// run's limits refuses every call from then on; a trip of an agent's own
// limits refuses that agent's calls alone (the others run on), unless
// Limits.TripAll. It is not safe for concurrent use.
type Set struct {
	run     *Breaker // nil when the run has no limits of its own
	agents  map[string]*Breaker
	tripAll bool
	first   *Trip            // the first trip, whoever's
	stopped *Trip            // the trip that refuses every call
	tripped map[string]*Trip // agents' trips, by agent
}

// NewSet returns the breakers for limits.
func NewSet(l Limits, price PriceFunc) *Set {
	s := &Set{agents: map[string]*Breaker{}, tripped: map[string]*Trip{}, tripAll: l.TripAll}
	if !l.own() {
		s.run = New(l, price)
	}
	for name, al := range l.Agents {
		if !al.own() {
			b := New(al, price)
			b.who = agentWho
			s.agents[name] = b
		}
	}
	return s
}

// Tripped is the first trip of any of the set's breakers, nil before.
func (s *Set) Tripped() *Trip { return s.first }

// Stops reports whether trip refuses every call of the run (the run's
// limits, or any under TripAll), rather than its agent's alone.
func (s *Set) Stops(t *Trip) bool { return t != nil && (t.Agent == "" || s.tripAll) }

// Before checks a call of agent ("" for none) against the run's breaker
// and the agent's.
func (s *Set) Before(agent string, c Call) *Trip {
	t := s.each(agent, func(b *Breaker) *Trip { return b.Before(c) })
	if t != nil {
		s.release(agent, c.Seq) // not sent: what the other breaker held for it goes
	}
	return t
}

// After counts an answer of agent.
func (s *Set) After(agent string, a Answer) *Trip {
	return s.each(agent, func(b *Breaker) *Trip { return b.After(a) })
}

func (s *Set) release(agent string, seq uint64) {
	if s.run != nil {
		s.run.release(seq)
	}
	if b := s.agents[agent]; b != nil {
		b.release(seq)
	}
}

// each runs f on the run's breaker and agent's, and returns the trip that
// refuses agent's calls, if any.
func (s *Set) each(agent string, f func(*Breaker) *Trip) *Trip {
	if s.stopped != nil {
		return s.stopped
	}
	if t := s.tripped[agent]; t != nil && agent != "" {
		return t
	}
	var found *Trip
	if s.run != nil {
		found = f(s.run)
	}
	if b := s.agents[agent]; b != nil && agent != "" {
		if t := f(b); t != nil && found == nil {
			at := *t
			at.Reason, at.Agent = "agent "+agent+": "+t.Reason, agent
			found = &at
			s.tripped[agent] = found
		}
	}
	if found != nil && s.first == nil {
		s.first = found
	}
	if s.Stops(found) {
		s.stopped = found
	}
	return found
}
