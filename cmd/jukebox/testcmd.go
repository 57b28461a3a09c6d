package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// TestCmd replays folders of tapes as regression tests: each strictly, in
// parallel, each a jukebox replay of its own (a hung or crashing agent
// takes no other tape with it).
type TestCmd struct {
	Paths   []string      `arg:"" optional:"" placeholder:"DIR|TAPE" help:"Tapes, and folders searched for *.jbx (default: the current folder)."`
	Jobs    int           `short:"j" placeholder:"N" help:"Tapes replayed at once (default: the number of CPUs)."`
	JUnit   string        `name:"junit" type:"path" placeholder:"FILE" help:"Also write the results as JUnit XML (GitHub Actions, GitLab and Jenkins read it)."`
	JSON    bool          `help:"Print the results as JSON on stdout (progress goes to stderr)."`
	Timeout time.Duration `default:"10m" help:"Longest a tape's replay may take; one that takes longer is stopped and fails."`
	outputFlags
	RecordMode string `name:"record-mode" enum:"none,once,new,all" default:"none" help:"none and once replay every tape (the tapes are there); new replays each and records what is new from the upstream it recorded into a tape that supersedes it; all records each again (jukebox record --record-mode, docs/recording.md)."`
	Booth      bool   `help:"Replay each tape in the Shadow Booth and roll it back (replay --booth --commit never): what the agents write leaves nothing in the folder, and the files an SDK transaction committed when recorded are in the agent's view again, where it may read them back (docs/python-sdk.md). Linux, confined (docs/booth.md)."`
}

// testResult is one tape's outcome (--json's tapes[]).
type testResult struct {
	Tape    string  `json:"tape"`
	Verdict string  `json:"verdict"` // pass, skipped, unreadable, diverged, differs, error, timeout, interrupted
	Code    int     `json:"exit_code"`
	Where   string  `json:"first_divergence,omitempty"`
	Seconds float64 `json:"seconds"`
	// Output is the end of what the replay printed on stderr (the agent's
	// output among it), for a tape that did not pass.
	Output string `json:"output,omitempty"`
}

// testSummary is --json's whole answer.
type testSummary struct {
	Tapes   []testResult `json:"tapes"`
	Passed  int          `json:"passed"`
	Failed  int          `json:"failed"`
	Skipped int          `json:"skipped"`
	// Interrupted counts the tapes an interrupt (Ctrl-C) stopped or kept
	// from running: neither passed nor failed.
	Interrupted int `json:"interrupted,omitempty"`
	Exit        int `json:"exit_code"`
}

// Validate checks flags before anything starts.
func (c *TestCmd) Validate() error {
	if c.Jobs < 0 {
		return fmt.Errorf("-j %d: at least 1 (0 is the number of CPUs)", c.Jobs)
	}
	if c.Timeout <= 0 {
		return fmt.Errorf("--timeout %s: a positive duration, such as 10m", c.Timeout)
	}
	if c.Booth && (c.RecordMode == "new" || c.RecordMode == "all") {
		return fmt.Errorf("--booth replays in the booth; --record-mode %s records the tapes again outside it: give one or the other", c.RecordMode)
	}
	return c.outputFlags.validate()
}

// Run finds the tapes, replays them and reports.
func (c *TestCmd) Run(ctx context.Context, env *Env) error {
	catchBrokenPipe() // its runs end, and their verdicts, whoever reads its output
	tapes, err := findTapes(c.Paths)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if len(tapes) == 0 {
		return withCode(ExitUsage, fmt.Errorf("no tapes (*.jbx) in %s", strings.Join(orDot(c.Paths), ", ")))
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if c.JUnit != "" {
		// Before the tapes run: a report that cannot be written lost
		// their results after they all had.
		if err := writable(c.JUnit); err != nil {
			return withCode(ExitUsage, fmt.Errorf("--junit %s: %w", c.JUnit, err))
		}
	}
	progress := env.Stdout
	if c.JSON {
		progress = env.Stderr
	}
	start := time.Now()
	results := c.runAll(ctx, self, tapes, progress)
	sum := summarise(results)
	if c.JSON {
		writeJSON(env.Stdout, sum)
	} else {
		printTestTable(env.Stdout, sum, time.Since(start))
	}
	var junitErr error
	switch {
	case c.JUnit != "" && sum.Interrupted > 0:
		// A suite cut short is no report: the tapes it stopped are not
		// failures, and those it never ran are not there.
		fmt.Fprintf(env.Stderr, "jukebox: test: --junit %s not written: the run was interrupted\n", c.JUnit)
	case c.JUnit != "":
		if err := writeJUnit(c.JUnit, results, time.Since(start)); err != nil {
			junitErr = fmt.Errorf("--junit %s: %w", c.JUnit, err)
		}
	}
	switch {
	case sum.Interrupted > 0:
		return withCode(ExitInterrupted, fmt.Errorf("test: interrupted: %d of %d tapes stopped or not run (%d passed, %d failed)",
			sum.Interrupted, len(results), sum.Passed, sum.Failed))
	case sum.Exit != ExitOK:
		return withCode(sum.Exit, errors.Join(fmt.Errorf("test: %d of %d tapes failed", sum.Failed, len(results)), junitErr))
	}
	return junitErr
}

// writable checks that a file can be written at path, its folder made
// when missing, without touching a file that is there.
func writable(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return errors.New("is a folder")
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".jukebox-write-check-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// runAll replays the tapes, c.Jobs at a time, telling progress each as it
// ends; the results come back in the tapes' order.
func (c *TestCmd) runAll(ctx context.Context, self string, tapes []string, progress io.Writer) []testResult {
	jobs := c.Jobs
	if jobs == 0 {
		jobs = runtime.NumCPU()
	}
	results := make([]testResult, len(tapes))
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	var mu sync.Mutex
	configs := &testConfigs{}
	for i, tape := range tapes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r := c.runOne(ctx, self, tape, configs)
			results[i] = r
			mu.Lock()
			defer mu.Unlock()
			printProgress(progress, r)
		}()
	}
	wg.Wait()
	return results
}

// summarise counts the results and picks the exit code: 130 when an
// interrupt stopped a tape or kept it from running (the run is cut
// short, whatever the others said), else the worst verdict's, 3 (a tape
// that does not read) over 5 (divergence) over 6 (strict mismatch) over
// 1 (an agent that could not run).
func summarise(results []testResult) testSummary {
	s := testSummary{Tapes: results}
	worst := map[int]bool{}
	for _, r := range results {
		switch r.Verdict {
		case "pass":
			s.Passed++
			continue
		case "skipped":
			s.Skipped++
			continue
		case "interrupted":
			s.Interrupted++
			continue
		}
		s.Failed++
		worst[r.Code] = true
	}
	if s.Interrupted > 0 {
		s.Exit = ExitInterrupted
		return s
	}
	for _, code := range []int{ExitBadTape, ExitDiverged, ExitDiffers, ExitInternal} {
		if worst[code] {
			s.Exit = code
			break
		}
	}
	return s
}

// verdictOf names the exit code of a tape's replay, and the code the
// test counts it as.
func verdictOf(code int) (string, int) {
	switch code {
	case ExitOK:
		return "pass", ExitOK
	case ExitBadTape:
		return "unreadable", ExitBadTape
	case ExitDiverged:
		return "diverged", ExitDiverged
	case ExitDiffers:
		return "differs", ExitDiffers
	}
	return "error", ExitInternal
}

func printProgress(w io.Writer, r testResult) {
	switch r.Verdict {
	case "pass":
		fmt.Fprintf(w, "ok    %s (%.1fs)\n", r.Tape, r.Seconds)
		return
	case "skipped":
		fmt.Fprintf(w, "skip  %s: %s\n", r.Tape, r.Where)
		return
	case "interrupted":
		fmt.Fprintf(w, "stop  %s (%.1fs): %s\n", r.Tape, r.Seconds, r.Where)
		return
	}
	fmt.Fprintf(w, "FAIL  %s (%.1fs): %s: %s\n", r.Tape, r.Seconds, r.Verdict, r.Where)
}

func printTestTable(w io.Writer, s testSummary, took time.Duration) {
	tw := table(w)
	fmt.Fprintln(tw, "\nTAPE\tVERDICT\tFIRST DIVERGENCE\tTIME")
	for _, r := range s.Tapes {
		where := r.Where
		if where == "" {
			where = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1fs\n", r.Tape, r.Verdict, oneLine(where, 100), r.Seconds)
	}
	tw.Flush()
	skipped := ""
	if s.Skipped > 0 {
		skipped = fmt.Sprintf(", %d skipped (not jukebox test's to replay; each line says why)", s.Skipped)
	}
	if s.Interrupted > 0 {
		skipped += fmt.Sprintf(", %d stopped or not run (interrupted)", s.Interrupted)
	}
	fmt.Fprintf(w, "%d passed, %d failed%s, in %.1fs\n", s.Passed, s.Failed, skipped, took.Seconds())
	for _, r := range s.Tapes {
		if r.Verdict != "pass" && r.Verdict != "skipped" && r.Verdict != "interrupted" && r.Output != "" {
			fmt.Fprintf(w, "\n--- %s (%s):\n%s\n", r.Tape, r.Verdict, strings.TrimRight(r.Output, "\n"))
		}
	}
}

// oneLine is s on one line, cut to n runes with an ellipsis.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// findTapes lists the tapes paths name: files as given, folders searched
// (sidecar folders NAME.jbx.d and hidden ones left out), sorted.
func findTapes(paths []string) ([]string, error) {
	var tapes []string
	for _, p := range orDot(paths) {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such tape or folder", p) // it was Go's "stat nope/: no such file or directory"
		}
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			tapes = append(tapes, p)
			continue
		}
		found, err := tapesUnder(p)
		if err != nil {
			return nil, err
		}
		tapes = append(tapes, found...)
	}
	sort.Strings(tapes)
	return dedupe(tapes), nil
}

func orDot(paths []string) []string {
	if len(paths) == 0 {
		return []string{"."}
	}
	return paths
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// errTimeout is a replay stopped at --timeout.
var errTimeout = errors.New("timed out")
