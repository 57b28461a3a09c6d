package main

// The search of jukebox bisect TAPE --check (issue 34, item 4): the last
// model call at which a change still rescues a run, the point of no
// return. bisectcheck.go forks, checks and reports; the search is kept
// pure so it is tested without agents.

import (
	"errors"
	"fmt"
)

// bisectProbe is one probe: a fork at model call Call, run Runs times,
// with its verdicts (true: the check passed, the change rescued the run).
type bisectProbe struct {
	Call     int    `json:"call"`
	Frame    int64  `json:"frame"` // its llm.request frame (bisect --check)
	Verdicts []bool `json:"verdicts"`
	Good     bool   `json:"good"`
	Reused   int    `json:"reused,omitempty"` // verdicts taken from forks already made
}

// bisectRun runs one fork at call (the run-th time) and checks it; reused
// says the verdict came from a fork already made.
type bisectRun func(call, run int) (good, reused bool, err error)

// errBisectRuns is a --runs below 1.
var errBisectRuns = errors.New("--runs must be at least 1")

// bisectSearch finds the last of calls model calls (0 to calls-1) at
// which the change rescues the run, assuming it rescues every call before
// that one and none after (monotone). It returns -1 when no call is
// rescued. Each probe runs up to runs times and takes the majority
// (strictly more than half good), stopping once the majority is decided;
// a tie is bad. With calls model calls it makes at most
// ceil(log2(calls+1)) probes: 7 for 64.
func bisectSearch(calls, runs int, probe bisectRun) (found int, probes []bisectProbe, err error) {
	if calls < 1 {
		return -1, nil, fmt.Errorf("the tape has no model calls: nothing to fork")
	}
	if runs < 1 {
		return -1, nil, errBisectRuns
	}
	lo, hi := -1, calls // lo: rescued (or none known); hi: not rescued
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		p, err := bisectMajority(mid, runs, probe)
		probes = append(probes, p)
		if err != nil {
			return -1, probes, err
		}
		if p.Good {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, probes, nil
}

// bisectMajority runs the probe at call until the majority of runs is
// decided.
func bisectMajority(call, runs int, probe bisectRun) (bisectProbe, error) {
	p := bisectProbe{Call: call}
	good, bad := 0, 0
	need := runs/2 + 1
	for run := 0; run < runs && good < need && bad < runs-need+1; run++ {
		ok, reused, err := probe(call, run)
		if err != nil {
			return p, fmt.Errorf("probe at model call %d, run %d: %w", call, run+1, err)
		}
		if reused {
			p.Reused++
		}
		p.Verdicts = append(p.Verdicts, ok)
		if ok {
			good++
		} else {
			bad++
		}
	}
	p.Good = good >= need
	return p, nil
}

// bisectCache keeps the verdicts of forks already made, keyed by the fork
// frame, the overrides and the run, so that a probe asked again (in this
// bisect or a later one over the same tape and change) forks nothing.
type bisectCache struct {
	overrides string // the overrides, canonical JSON
	frames    []uint64
	verdicts  map[string]bool
}

func (c *bisectCache) key(call, run int) string {
	return fmt.Sprintf("%d\x00%s\x00%d", c.frames[call], c.overrides, run)
}

// wrap answers from the cache what it holds and keeps what fork answers.
func (c *bisectCache) wrap(fork bisectRun) bisectRun {
	return func(call, run int) (bool, bool, error) {
		k := c.key(call, run)
		if v, ok := c.verdicts[k]; ok {
			return v, true, nil
		}
		v, _, err := fork(call, run)
		if err != nil {
			return false, false, err
		}
		if c.verdicts == nil {
			c.verdicts = map[string]bool{}
		}
		c.verdicts[k] = v
		return v, false, nil
	}
}
