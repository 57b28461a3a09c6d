package main

import (
	"errors"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestBisectSearch64Calls: over a 64-call run, whatever the point of no
// return (none, each call, the last), a monotone answer is found in at
// most 7 probes of one run each.
func TestBisectSearch64Calls(t *testing.T) {
	const calls = 64
	for last := -1; last < calls; last++ {
		forks := 0
		found, probes, err := bisectSearch(calls, 1, func(call, run int) (bool, bool, error) {
			forks++
			return call <= last, false, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if found != last {
			t.Errorf("point of no return %d: found %d", last, found)
		}
		if len(probes) > 7 || forks > 7 {
			t.Errorf("point of no return %d: %d probes, %d forks, want at most 7", last, len(probes), forks)
		}
		for _, p := range probes {
			if p.Good != (p.Call <= last) {
				t.Errorf("probe at call %d said good=%v", p.Call, p.Good)
			}
		}
	}
	if want := bits.Len(calls); want != 7 {
		t.Fatalf("ceil(log2(65)) = %d", want)
	}
}

// TestBisectSearchMajority: a model that answers randomly (seeded) gives
// the wrong verdict one run in five; with --runs 5 the majority finds
// the known point of no return, each probe stopping once it is decided.
func TestBisectSearchMajority(t *testing.T) {
	const calls, last, runs = 40, 17, 5
	r := rand.New(rand.NewPCG(34, 4))
	flips, forks := 0, 0
	found, probes, err := bisectSearch(calls, runs, func(call, run int) (bool, bool, error) {
		forks++
		good := call <= last
		if r.IntN(5) == 0 {
			flips++
			good = !good
		}
		return good, false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found != last {
		t.Fatalf("found %d, want %d (probes %+v)", found, last, probes)
	}
	if flips == 0 {
		t.Fatal("the seeded model never answered wrongly: the test proves nothing")
	}
	if forks > len(probes)*runs {
		t.Errorf("%d forks for %d probes of %d runs", forks, len(probes), runs)
	}
	for _, p := range probes {
		if len(p.Verdicts) < 3 || len(p.Verdicts) > runs {
			t.Errorf("probe at call %d ran %d times, want 3 to %d", p.Call, len(p.Verdicts), runs)
		}
	}
	// One run alone is misled by the same model at some seed.
	misled := false
	for seed := uint64(0); seed < 50 && !misled; seed++ {
		r := rand.New(rand.NewPCG(seed, 4))
		found, _, _ := bisectSearch(calls, 1, func(call, run int) (bool, bool, error) {
			return (call <= last) != (r.IntN(5) == 0), false, nil
		})
		misled = found != last
	}
	if !misled {
		t.Error("--runs 1 was never misled: the noise is too weak to test the majority")
	}
}

// TestBisectSearchReuse: a second bisect over the same tape and change
// forks nothing: every verdict comes from the forks the first one made.
func TestBisectSearchReuse(t *testing.T) {
	frames := make([]uint64, 64)
	for i := range frames {
		frames[i] = uint64(3 + 4*i)
	}
	cache := &bisectCache{overrides: `{"model":"good"}`, frames: frames}
	forks := 0
	fork := func(call, run int) (bool, bool, error) {
		forks++
		return call <= 41, false, nil
	}
	found1, probes1, err := bisectSearch(len(frames), 3, cache.wrap(fork))
	if err != nil || found1 != 41 {
		t.Fatalf("first bisect: %d, %v", found1, err)
	}
	first := forks
	found2, probes2, err := bisectSearch(len(frames), 3, cache.wrap(fork))
	if err != nil || found2 != 41 {
		t.Fatalf("second bisect: %d, %v", found2, err)
	}
	if forks != first {
		t.Errorf("the second bisect forked %d more times", forks-first)
	}
	for i, p := range probes2 {
		if p.Reused != len(p.Verdicts) || p.Call != probes1[i].Call {
			t.Errorf("probe %d: %+v, not reused from %+v", i, p, probes1[i])
		}
	}
	other := &bisectCache{overrides: `{"model":"other"}`, frames: frames, verdicts: cache.verdicts}
	if _, _, err := bisectSearch(len(frames), 1, other.wrap(fork)); err != nil {
		t.Fatal(err)
	}
	if forks == first {
		t.Error("other overrides reused the first change's forks")
	}
}

// TestBisectSearchNonsense: --runs 0 and a tape with no model calls are
// errors, naming what is wrong.
func TestBisectSearchNonsense(t *testing.T) {
	never := func(int, int) (bool, bool, error) { t.Fatal("forked"); return false, false, nil }
	if _, _, err := bisectSearch(10, 0, never); !errors.Is(err, errBisectRuns) {
		t.Errorf("--runs 0: %v", err)
	}
	if _, _, err := bisectSearch(0, 1, never); err == nil {
		t.Error("no model calls: no error")
	}
	boom := errors.New("agent missing")
	_, probes, err := bisectSearch(8, 1, func(int, int) (bool, bool, error) { return false, false, boom })
	if !errors.Is(err, boom) || len(probes) != 1 {
		t.Errorf("a failing fork: %v after %d probes", err, len(probes))
	}
}
