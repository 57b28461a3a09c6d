package main

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The times the jobs took in the run before (-times FILE), so that they
// run longest first: run in the order of the job file, a long package
// that came late in it ran on alone at the end while the other slots
// stood idle. A line a job: its seconds, a tab, its key (jobKey).

// jobKey names a job across runs: its package and its own flags (the
// binary's path changes with each run's folder).
func jobKey(j job) string { return j.pkg + "\t" + strings.Join(j.args, " ") }

// readTimes reads a times file; one that is not there yet is no times.
func readTimes(name string) (map[string]float64, error) {
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]float64{}, nil
	}
	if err != nil {
		return nil, err
	}
	times := map[string]float64{}
	for i, l := range strings.Split(string(data), "\n") {
		if l == "" {
			continue
		}
		secs, k, ok := strings.Cut(l, "\t")
		s, err := strconv.ParseFloat(secs, 64)
		if !ok || err != nil || s < 0 {
			return nil, fmt.Errorf("%s:%d: want SECONDS<tab>IMPORTPATH<tab>FLAGS, got %q (remove the file to start again)", name, i+1, l)
		}
		times[k] = s
	}
	return times, nil
}

// longestFirst orders jobs for the run: the jobs of no known time first
// (a new one may be long), in the order given, then the others, longest
// first.
func longestFirst(jobs []job, times map[string]float64) []job {
	out := slices.Clone(jobs)
	slices.SortStableFunc(out, func(a, b job) int {
		ta, oka := times[jobKey(a)]
		tb, okb := times[jobKey(b)]
		if oka != okb { // the one of no known time first
			if !oka {
				return -1
			}
			return 1
		}
		return cmp.Compare(tb, ta) // both unknown: 0 and 0, as given
	})
	return out
}

// writeTimes replaces the times file with the times of the jobs that
// ended in this run (a file written whole, then renamed over the old).
func writeTimes(name string, jobs []job, took map[int]time.Duration) error {
	var b strings.Builder
	for i, j := range jobs {
		if d, ok := took[i]; ok {
			fmt.Fprintf(&b, "%.3f\t%s\n", d.Seconds(), jobKey(j))
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), ".times-*")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(b.String())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
