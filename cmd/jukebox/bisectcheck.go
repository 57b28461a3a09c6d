package main

// jukebox bisect TAPE --check CMD (issue 34, item 4): fork the run at its
// model calls with a change, check each fork with CMD, and binary-search
// for the point of no return (bisectsearch.go). Each probe is a `jukebox
// fork` of this binary, so it forks exactly as fork does, flags and all.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/jukebox-os/jukebox/breaker"
	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/sidecar"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// bisectCheckReport is bisect --check's answer (--json).
type bisectCheckReport struct {
	Tape      string                `json:"tape"`
	Calls     int                   `json:"calls"`
	Change    []string              `json:"change"`
	Check     string                `json:"check"`
	Runs      int                   `json:"runs"`
	Found     *timeline.BisectFound `json:"found"` // null when the cost cap stopped it first
	Probes    []bisectProbe         `json:"probes"`
	CostUSD   float64               `json:"cost_usd"` // of the forks made now (reused ones cost nothing)
	Stopped   string                `json:"stopped,omitempty"`
	Bracket   [2]int                `json:"bracket"` // the calls known rescued (first) and not (second) when it stopped
	ProbeTape []string              `json:"probe_tapes"`
}

// errBisectCap stops a bisect at its --max-cost.
var errBisectCap = errors.New("the cost cap is spent")

// runCheck bisects c.Tape with c.Check.
func (c *BisectCmd) runCheck(ctx context.Context, env *Env) error {
	if !tapefmt.IsRemote(c.Tape) {
		// Each probe's fork runs in a copy of the run's folder, which
		// holds no tape: a relative path would name none there.
		abs, err := filepath.Abs(c.Tape)
		if err != nil {
			return err
		}
		c.Tape = abs
	}
	start, err := parentStart(env.remote(), c.Tape, env.Stderr)
	if err != nil {
		return err
	}
	t, err := env.openTape(c.Tape)
	if err != nil {
		return err
	}
	var frames []uint64
	for f, err := range t.Frames(tapefmt.KindLLMRequest) {
		if err != nil {
			t.Close()
			return fmt.Errorf("%s: %w", c.Tape, err)
		}
		frames = append(frames, f.Seq)
	}
	t.Close()
	if len(frames) == 0 {
		return fmt.Errorf("%s: the run made no model call: nothing to fork", c.Tape)
	}
	change, err := c.changeArgs()
	if err != nil {
		return withCode(ExitUsage, err)
	}
	key, err := c.changeKey(change)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	statePath := filepath.Join(sidecar.Dir(c.Tape), timeline.BisectFile)
	var state timeline.BisectState
	if b, err := os.ReadFile(statePath); err == nil {
		if err := json.Unmarshal(b, &state); err != nil {
			return fmt.Errorf("%s: %w (remove it to start afresh)", statePath, err)
		}
	}
	if state.Probes == nil {
		state.Probes = map[string]timeline.BisectVerdict{}
	}
	if c.Fresh { // this change and check's alone
		maps.DeleteFunc(state.Probes, func(k string, _ timeline.BisectVerdict) bool { return strings.HasSuffix(k, "|"+key) })
	}
	rep := bisectCheckReport{Tape: c.Tape, Calls: len(frames), Change: change, Check: c.Check, Runs: c.Runs}
	made := 0
	fork := func(call, run int) (bool, bool, error) {
		k := fmt.Sprintf("%d|%d|%s", frames[call], run, key)
		if v, ok := state.Probes[k]; ok {
			if _, err := os.Stat(v.Tape); err == nil {
				return v.Good, true, nil
			}
		}
		if c.MaxCost > 0 && rep.CostUSD >= c.MaxCost {
			return false, false, errBisectCap
		}
		made++
		fmt.Fprintf(env.Stderr, "jukebox: bisect: probe %d: model call %d (frame %d)%s\n", made, call, frames[call], runNote(run, c.Runs))
		v, err := c.probe(ctx, env, start, change, frames[call], call, run, c.MaxCost-rep.CostUSD)
		rep.CostUSD += v.Cost
		if v.Tape != "" {
			rep.ProbeTape = append(rep.ProbeTape, v.Tape)
		}
		if err != nil {
			return false, false, err
		}
		state.Probes[k] = v
		if err := writeBisectState(statePath, state); err != nil {
			fmt.Fprintf(env.Stderr, "jukebox: bisect: %v (the probes made are not remembered)\n", err)
		}
		return v.Good, false, nil
	}
	found, probes, err := bisectSearch(len(frames), c.Runs, fork)
	rep.Probes = probes
	for i := range rep.Probes {
		rep.Probes[i].Frame = int64(frames[rep.Probes[i].Call])
	}
	rep.Bracket = bisectBracket(probes, len(frames))
	switch {
	case errors.Is(err, errBisectCap):
		rep.Stopped = fmt.Sprintf("the cost cap of %s is spent (%s)", breaker.USD(c.MaxCost), breaker.USD(rep.CostUSD))
	case err != nil:
		return err
	default:
		f := &timeline.BisectFound{Change: strings.Join(change, " "), Check: c.Check, Call: found, Frame: -1, Step: found + 1}
		if found >= 0 {
			f.Frame = int64(frames[found])
		}
		rep.Found, state.Found = f, f
		if err := writeBisectState(statePath, state); err != nil {
			fmt.Fprintf(env.Stderr, "jukebox: bisect: %v\n", err)
		}
	}
	if c.JSON {
		if err := writeJSON(env.Stdout, rep); err != nil {
			return err
		}
	} else {
		c.printCheck(env.Stdout, rep)
	}
	if rep.Stopped != "" {
		return withCode(ExitTripped, fmt.Errorf("bisect stopped: %s", rep.Stopped))
	}
	return nil
}

func runNote(run, runs int) string {
	if runs <= 1 {
		return ""
	}
	return fmt.Sprintf(", run %d of %d", run+1, runs)
}

// bisectBracket is what the probes made know: the last call found rescued
// (-1: none known) and the first found not (calls: none known).
func bisectBracket(probes []bisectProbe, calls int) [2]int {
	lo, hi := -1, calls
	for _, p := range probes {
		if len(p.Verdicts) == 0 {
			continue
		}
		if p.Good && p.Call > lo {
			lo = p.Call
		}
		if !p.Good && p.Call < hi {
			hi = p.Call
		}
	}
	return [2]int{lo, hi}
}

// printCheck prints the report as text.
func (c *BisectCmd) printCheck(w io.Writer, rep bisectCheckReport) {
	for _, p := range rep.Probes {
		verdict := "bad"
		switch {
		case len(p.Verdicts) == 0:
			verdict = "stopped before a verdict"
		case p.Good:
			verdict = "good"
		}
		votes := ""
		if rep.Runs > 1 {
			votes = fmt.Sprintf(" (%s)", votesText(p.Verdicts))
		}
		reused := ""
		if p.Reused > 0 {
			reused = fmt.Sprintf(", %d reused", p.Reused)
		}
		fmt.Fprintf(w, "  model call %d (frame %d, step %d): %s%s%s\n", p.Call, p.Frame, p.Call+1, verdict, votes, reused)
	}
	f := rep.Found
	switch {
	case f == nil:
		fmt.Fprintf(w, "stopped: %s; %s\n", rep.Stopped, bracketText(rep.Bracket, rep.Calls))
	case f.Call < 0:
		fmt.Fprintf(w, "no point of no return found: forked with the change at its first model call (frame %d), the run still fails the check\n", rep.Probes[len(rep.Probes)-1].Frame)
	case f.Call == rep.Calls-1:
		fmt.Fprintf(w, "the change rescues the run even at its last model call (frame %d, step %d): the run is not lost before its end\n", f.Frame, f.Step)
	default:
		fmt.Fprintf(w, "point of no return: after model call %d (frame %d, step %d): forked there with the change, the run passes the check; from model call %d on it does not\n",
			f.Call, f.Frame, f.Step, f.Call+1)
	}
	fmt.Fprintf(w, "%d probes, %d forks made now, live cost %s\n", len(rep.Probes), len(rep.ProbeTape), breaker.USD(rep.CostUSD))
}

// bracketText says what a stopped bisect knows (bisectBracket).
func bracketText(b [2]int, calls int) string {
	switch lo, hi := b[0], b[1]; {
	case lo < 0 && hi >= calls:
		return "no probe was decided: nothing is known yet"
	case lo < 0:
		return fmt.Sprintf("so far the change does not rescue the run at model call %d, and no call is known where it does", hi)
	case hi >= calls:
		return fmt.Sprintf("so far the change rescues the run at model call %d, and no later call is known where it does not", lo)
	default:
		return fmt.Sprintf("so far the change rescues the run at model call %d and not at %d", lo, hi)
	}
}

func votesText(vs []bool) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = map[bool]string{true: "good", false: "bad"}[v]
	}
	return strings.Join(s, ", ")
}

// changeArgs are the fork flags of the change, as fork takes them.
func (c *BisectCmd) changeArgs() ([]string, error) {
	var a []string
	if c.Model != "" {
		a = append(a, "--model", c.Model)
	}
	if c.SystemPromptFile != "" {
		a = append(a, "--system-prompt-file", c.SystemPromptFile)
	}
	for _, s := range c.Set {
		a = append(a, "--set", s)
	}
	if c.SetFile != "" {
		a = append(a, "--set-file", c.SetFile)
	}
	if c.Temperature != nil {
		a = append(a, "--temperature", strconv.FormatFloat(*c.Temperature, 'g', -1, 64))
	}
	if c.Patch != "" {
		a = append(a, "--patch", c.Patch)
	}
	if c.Once {
		a = append(a, "--once")
	}
	if len(a) == 0 {
		return nil, fmt.Errorf("bisect --check needs a change to fork with: --model, --system-prompt-file, --set, --set-file, --temperature or --patch")
	}
	return a, nil
}

// changeKey names the change and the check for the probes remembered:
// the flags, the content of the files they name, and the command.
func (c *BisectCmd) changeKey(change []string) (string, error) {
	h := sha256.New()
	for _, a := range change {
		fmt.Fprintf(h, "%q ", a)
	}
	for _, f := range []string{c.SystemPromptFile, c.SetFile} {
		if f == "" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	fmt.Fprintf(h, "\x00%s", c.Check)
	return hex.EncodeToString(h.Sum(nil)[:12]), nil
}

// probeName is the stem of a probe's tape, NAME-bisect-cCALL-rRUN (a
// -N follows when the name is taken): jukebox test leaves such tapes out
// of a folder (probeTape), since each ran in a copy of the run's folder
// that is gone once its check ran.
func probeName(stem string, call, run int) string {
	return fmt.Sprintf("%s-bisect-c%d-r%d", stem, call, run)
}

// probeTape matches the file name of a probe's tape (probeName).
var probeTape = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-bisect-c\d+-r\d+(-\d+)?\.jbx$`) })

// probe forks the run at frame with the change, in a copy of its folder,
// and runs the check there.
func (c *BisectCmd) probe(ctx context.Context, env *Env, start *tapefmt.RunStart, change []string, frame uint64, call, run int, budget float64) (timeline.BisectVerdict, error) {
	stem := strings.TrimSuffix(c.Tape, ".jbx")
	name := probeName(filepath.Base(stem), call, run)
	tape := filepath.Join(filepath.Dir(c.Tape), name+".jbx")
	for n := 2; fileExists(tape); n++ {
		tape = filepath.Join(filepath.Dir(c.Tape), fmt.Sprintf("%s-%d.jbx", name, n))
	}
	work, err := os.MkdirTemp("", "jukebox-bisect-")
	if err != nil {
		return timeline.BisectVerdict{}, err
	}
	if c.KeepWorkspaces {
		fmt.Fprintf(env.Stderr, "jukebox: bisect: the fork's folder is kept at %s\n", work)
	} else {
		defer os.RemoveAll(work)
	}
	ws := filepath.Join(work, "workspace")
	if err := copyTree(start.Cwd, ws); err != nil {
		return timeline.BisectVerdict{}, fmt.Errorf("copying the run's folder %s for the probe: %w", termtext.Sanitize(start.Cwd), err)
	}
	self, err := os.Executable()
	if err != nil {
		return timeline.BisectVerdict{}, err
	}
	args := append([]string{"fork", c.Tape, "--frame", strconv.FormatUint(frame, 10), "--dir", ws, "-o", tape, "--json"}, change...)
	if c.NoBooth {
		args = append(args, "--no-booth")
	} else {
		args = append(args, "--commit", "always")
	}
	for name, url := range c.Upstream {
		args = append(args, "--upstream", name+"="+url)
	}
	if c.MaxCost > 0 {
		args = append(args, "--max-cost", strconv.FormatFloat(max(budget, 0), 'g', -1, 64))
	}
	if c.UnknownModelRate != nil {
		args = append(args, "--unknown-model-rate", strconv.FormatFloat(*c.UnknownModelRate, 'g', -1, 64))
	}
	fork := exec.CommandContext(ctx, self, args...)
	var out, logs bytes.Buffer
	fork.Stdout, fork.Stderr = &out, &logs
	fork.Dir = ws
	ferr := fork.Run()
	var rows []struct {
		Tape    string               `json:"tape"`
		End     tapefmt.RunEnd       `json:"end"`
		Breaker *tapefmt.BreakerTrip `json:"breaker"`
	}
	if json.Unmarshal(out.Bytes(), &rows) != nil || len(rows) != 1 || rows[0].Tape == "" {
		return timeline.BisectVerdict{}, fmt.Errorf("jukebox fork at frame %d: %v\n%s", frame, ferr, lastLines(logs.String(), 12))
	}
	v := timeline.BisectVerdict{Tape: rows[0].Tape, Exit: rows[0].End.ExitCode}
	var fe *exec.ExitError
	tripped := errors.As(ferr, &fe) && fe.ExitCode() == ExitTripped
	if b := rows[0].Breaker; tripped && b != nil && b.Rule != breaker.RuleCost {
		// Not the cap: a fork stopped so says nothing of the change, and
		// the bisect cannot go on (a model without a price is the
		// usual one: --unknown-model-rate, or --prices).
		return v, fmt.Errorf("the fork at frame %d tripped the circuit breaker (%s): %s", frame, b.Rule, b.Reason)
	}
	pt, err := tapefmt.Open(v.Tape)
	if err != nil {
		return v, err
	}
	v.Cost, err = timeline.LiveCost(pt)
	var stdout bytes.Buffer
	for f, ferr := range pt.Frames(tapefmt.KindOutput) {
		if ferr != nil {
			break
		}
		if p, derr := f.Decode(); derr == nil {
			if o, ok := p.(*tapefmt.Output); ok && o.Fd == 1 {
				stdout.Write(o.Data)
			}
		}
	}
	pt.Close()
	if err != nil {
		return v, err
	}
	if tripped && c.MaxCost > 0 {
		// What is left of the cap stopped this fork: its check would say
		// nothing of the change.
		return v, errBisectCap
	}
	outFile := filepath.Join(work, "output.txt")
	if err := os.WriteFile(outFile, stdout.Bytes(), 0o644); err != nil {
		return v, err
	}
	check := exec.CommandContext(ctx, "sh", "-c", c.Check)
	check.Dir = ws
	check.Env = append(os.Environ(), "JUKEBOX_BISECT_TAPE="+v.Tape, "JUKEBOX_BISECT_PARENT="+c.Tape,
		"JUKEBOX_BISECT_FRAME="+strconv.FormatUint(frame, 10), "JUKEBOX_BISECT_CALL="+strconv.Itoa(call),
		"JUKEBOX_BISECT_RUN="+strconv.Itoa(run+1), "JUKEBOX_BISECT_WORKSPACE="+ws, "JUKEBOX_BISECT_OUTPUT="+outFile,
		"JUKEBOX_BISECT_EXIT="+strconv.Itoa(v.Exit))
	check.Stdout, check.Stderr = env.Stderr, env.Stderr
	err = check.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		v.Good = true
	case errors.As(err, &ee):
	default:
		return v, fmt.Errorf("--check %q: %w", c.Check, err)
	}
	return v, nil
}

func fileExists(p string) bool { _, err := os.Lstat(p); return err == nil }

// writeBisectState writes the state whole (tapefmt.WriteSidecarFile).
func writeBisectState(path string, s timeline.BisectState) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return sidecar.WriteFile(path, append(b, '\n'))
}

// copyTree copies the folder src to dst (made), files, folders and
// symlinks as they are, modes kept; tapes, their sidecar folders and the
// booth's state are left out.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() && (rel == filepath.Join(".jukebox", "booth") || strings.HasSuffix(d.Name(), ".jbx.d")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".jbx") {
			return nil // tapes (this run's, its probes') are not the agent's world
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case info.Mode().IsRegular():
			return copyFile(p, to, info.Mode().Perm())
		}
		return nil // a device, fifo or socket is not copied
	})
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}
