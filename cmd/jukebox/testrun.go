package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// testConfigFile is the file beside tapes that jukebox test reads.
const testConfigFile = "jukebox.json"

// testConfig is jukebox.json: what replays the tapes of its folder, in
// place of what each tape recorded. Tapes maps a tape's file name (or a
// glob, path.Match syntax) to settings of its own, over the folder's.
type testConfig struct {
	testSettings
	Tapes map[string]testSettings `json:"tapes"`

	dir string // the folder it is in
}

// testSettings are one tape's: the command (argv), the folder it runs in
// (relative to the config's folder), and --ignore-output patterns.
type testSettings struct {
	Command      []string `json:"command"`
	Dir          string   `json:"dir"`
	IgnoreOutput []string `json:"ignore_output"`
}

// testConfigs reads each folder's jukebox.json once.
type testConfigs struct {
	mu   sync.Mutex
	byID map[string]*testConfig
	errs map[string]error
}

// forTape is the settings for tape: its folder's jukebox.json, the tape's
// entry over the folder's defaults; zero when there is none.
func (cs *testConfigs) forTape(tape string) (testSettings, error) {
	dir := filepath.Dir(tape)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.byID == nil {
		cs.byID, cs.errs = map[string]*testConfig{}, map[string]error{}
	}
	c, seen := cs.byID[dir]
	if !seen {
		c, cs.errs[dir] = readTestConfig(dir)
		cs.byID[dir] = c
	}
	if err := cs.errs[dir]; err != nil || c == nil {
		return testSettings{}, err
	}
	s := c.testSettings
	apply := func(t testSettings) {
		if t.Command != nil {
			s.Command = t.Command
		}
		if t.Dir != "" {
			s.Dir = t.Dir
		}
		s.IgnoreOutput = append(append([]string{}, s.IgnoreOutput...), t.IgnoreOutput...)
	}
	// The globs that match apply in the order of their keys, then the
	// entry named for the tape exactly, over them: in the map's order a
	// tape matched by "*.jbx" and by its own name ran either command from
	// one run to the next, and a name that reads as a glob (a[1].jbx) did
	// not match itself.
	base := filepath.Base(tape)
	for _, pat := range slices.Sorted(maps.Keys(c.Tapes)) {
		if ok, _ := filepath.Match(pat, base); ok && pat != base {
			apply(c.Tapes[pat])
		}
	}
	if t, ok := c.Tapes[base]; ok {
		apply(t)
	}
	if s.Dir != "" && !filepath.IsAbs(s.Dir) {
		s.Dir = filepath.Join(c.dir, s.Dir)
	}
	return s, nil
}

// readTestConfig reads dir's jukebox.json; nil when there is none.
func readTestConfig(dir string) (*testConfig, error) {
	path := filepath.Join(dir, testConfigFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var c testConfig
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w (keys: command, dir, ignore_output, tapes)", path, err)
	}
	for pat := range c.Tapes {
		if _, err := filepath.Match(pat, ""); err != nil {
			return nil, fmt.Errorf("%s: tapes: %q is no file name or glob: %w", path, pat, err) // it matched nothing, unsaid
		}
	}
	c.dir = dir
	return &c, nil
}

// recordModeTape matches the names of the tapes --record-mode new or all
// keeps beside a tape (NAME.superseded-TIME.jbx, NAME.failed-TIME.jbx) or
// is writing (NAME.new-TIME.jbx): by their time stamp too, so that a tape
// of the user's named release.new-model.jbx is not taken for one.
var recordModeTape = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\.(superseded|failed|new)-[0-9]{8}-[0-9]{6}\.[0-9]{3}\.jbx$`)
})

// supersededTape says whether a tape's file name is one --record-mode new
// or all keeps beside a tape, or is writing.
func supersededTape(name string) bool { return recordModeTape().MatchString(name) }

// tapesUnder lists the *.jbx files under dir, but superseded ones and
// bisect's probes (probeTape).
func tapesUnder(dir string) ([]string, error) {
	var tapes []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && p != dir && (strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".jbx.d") || name == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".jbx") && !supersededTape(name) && !probeTape().MatchString(name) {
			tapes = append(tapes, p)
		}
		return nil
	})
	return tapes, err
}

// runOne replays tape strictly in a jukebox replay of its own, in the
// folder and with the command its settings or its recording name.
func (c *TestCmd) runOne(ctx context.Context, self, tape string, configs *testConfigs) (r testResult) {
	r.Tape = tape
	start := time.Now()
	defer func() { r.Seconds = time.Since(start).Seconds() }()
	interrupted := ctx.Err // the test's, before the tape's --timeout is added
	if interrupted() != nil {
		r.Verdict, r.Code, r.Where = "interrupted", ExitInterrupted, "not run: the test was interrupted"
		return r
	}
	defer func() {
		// An interrupt (Ctrl-C) stops the replays it finds running: what
		// they then report is not their tape's verdict.
		if interrupted() != nil && r.Verdict != "pass" && r.Verdict != "skipped" {
			r.Verdict, r.Code, r.Where, r.Output = "interrupted", ExitInterrupted, "stopped by an interrupt", ""
		}
	}()
	args, dir, err := c.replayArgs(tape, configs)
	var skip *skipError
	if errors.As(err, &skip) {
		r.Verdict, r.Code, r.Where = "skipped", ExitOK, skip.why
		return r
	}
	if err != nil {
		r.Verdict, r.Code = verdictOf(ExitInternal)
		r.Where = err.Error()
		var bad *badTapeError
		if errors.As(err, &bad) {
			r.Verdict, r.Code = verdictOf(ExitBadTape)
		}
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Dir = dir
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &limitedBuffer{max: 1 << 20, b: &stderr}
	runErr := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	r.Verdict, r.Code = verdictOf(code)
	if c.RecordMode == "new" || c.RecordMode == "all" {
		// A recording's exit code is its agent's: 3, 5 or 6 are not
		// jukebox's verdicts there. It passed when the run ended as the
		// recorded one did (the tape is the new one then, else the old).
		r.Verdict, r.Code = verdictOf(ExitInternal)
		if code == ExitOK || recordedAlike(code, stdout.Bytes(), tape) {
			r.Verdict, r.Code = verdictOf(ExitOK)
		}
	}
	if r.Verdict == "pass" || reproducedEnd(code, stdout.Bytes()) {
		r.Verdict, r.Code = verdictOf(ExitOK)
		return r
	}
	r.Where = whereItFailed(stdout.Bytes(), stderr.String())
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		r.Verdict, r.Code, r.Where = "timeout", ExitInternal, fmt.Sprintf("%s after %s (--timeout)", errTimeout, c.Timeout)
	} else if code < 0 && runErr != nil {
		r.Where = runErr.Error()
	}
	r.Output = lastLines(stderr.String(), 40)
	return r
}

// skipError: a tape jukebox test leaves to the test runner that made it.
type skipError struct{ why string }

func (e *skipError) Error() string { return e.why }

// harnessTape says why a tape is not jukebox test's to replay: the pytest
// plugin's tapes have its stand-in for a command, which runs only under
// pytest; engine/jukeboxtest's have none, the test program having been
// the agent; a tape jukebox mcp made on its own holds an MCP server's
// session with a client jukebox did not start, and its command is the
// server's. "" for any other tape.
func harnessTape(path string, start *tapefmt.RunStart) string {
	switch {
	case len(start.Argv) >= 2 && start.Argv[len(start.Argv)-2] == "-m" && start.Argv[len(start.Argv)-1] == "jukebox._pytest_child":
		return "recorded by jukebox's pytest plugin: pytest replays it (its command runs only under the plugin)"
	case len(start.Argv) == 0:
		return "recorded by a program in its own process (engine/jukeboxtest): go test replays it"
	case mcpServerTape(path, start):
		return "recorded by jukebox mcp on its own: its command is the MCP server's, and the client that drove it is not on the tape; replay the agent's own run, whose jukebox mcp serves the session from it"
	}
	return ""
}

// mcpServerTape says whether the tape at path is one jukebox mcp recorded
// on its own (outside any run): jukebox did not start its process
// (external), it is named after its server (mcp-NAME), and its first MCP
// frame is that server's.
func mcpServerTape(path string, start *tapefmt.RunStart) bool {
	server, ok := strings.CutPrefix(start.Name, "mcp-")
	if !start.External || !ok {
		return false
	}
	t, err := tapefmt.Open(path)
	if err != nil {
		return false
	}
	defer t.Close()
	for f, err := range t.Frames(tapefmt.KindMCP) {
		if err != nil {
			return false
		}
		p, err := f.Decode()
		m, isMCP := p.(*tapefmt.MCPMessage)
		return err == nil && isMCP && m.Server == server
	}
	return false
}

// badTapeError: a tape that does not open.
type badTapeError struct{ err error }

func (e *badTapeError) Error() string { return e.err.Error() }
func (e *badTapeError) Unwrap() error { return e.err }

// replayArgs is the jukebox replay command line for tape: strict, with
// the folder and command of its settings, else those it recorded.
func (c *TestCmd) replayArgs(tape string, configs *testConfigs) (args []string, dir string, err error) {
	s, err := configs.forTape(tape)
	if err != nil {
		return nil, "", err
	}
	if v := verifyOne(nil, tape, tapefmt.VerifyOptions{Blobs: true}); !v.OK {
		return nil, "", &badTapeError{v.err}
	}
	start, err := parentStart(nil, tape, nil)
	if err != nil {
		return nil, "", &badTapeError{err}
	}
	if why := harnessTape(tape, start); why != "" && len(s.Command) == 0 {
		return nil, "", &skipError{why}
	}
	dir = s.Dir
	if dir == "" {
		dir = start.Cwd
	}
	if st, err := os.Stat(dir); dir == "" || err != nil || !st.IsDir() {
		return nil, "", fmt.Errorf("the folder the tape was recorded in (%q) is not here: give \"dir\" in a %s beside the tape", dir, testConfigFile)
	}
	// The replay runs in dir and is given --dir dir: relative, it was
	// taken from dir again.
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, "", err
	}
	abs, err := filepath.Abs(tape)
	if err != nil {
		return nil, "", err
	}
	if c.RecordMode == "new" || c.RecordMode == "all" {
		return recordArgs(c.RecordMode, abs, start, s.Command), dir, nil
	}
	args = []string{"replay", "--strict", "--json", "--dir", dir}
	if c.Booth {
		args = append(args, "--booth", "--commit", "never")
	}
	for _, p := range append(append([]string{}, c.IgnoreOutput...), s.IgnoreOutput...) {
		args = append(args, "--ignore-output", p)
	}
	args = append(args, abs)
	if len(s.Command) > 0 {
		args = append(append(args, "--"), s.Command...)
	}
	return args, dir, nil
}

// recordArgs is the jukebox record command line that records tape again
// under --record-mode new or all, to the upstreams it recorded, its
// command the one given, else the recorded one (jukebox test runs it in
// the tape's folder).
func recordArgs(mode, tape string, start *tapefmt.RunStart, command []string) []string {
	args := []string{"record", "--record-mode", mode, "-o", tape, "--json"}
	names := make([]string, 0, len(start.Upstream))
	for name := range start.Upstream {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		args = append(args, "--upstream", name+"="+start.Upstream[name])
	}
	if len(command) == 0 {
		command = start.Argv
	}
	return append(append(args, "--"), command...)
}

// reproducedEnd says whether a replay that exited code (not 0) reproduced
// its recording whole, by its --json result: the recorded agent failed
// (its exit code, or the recording's interruption replayed where it was)
// and ended so again, with the same stdout and every call answered from
// the tape. A tape is a test of reproduction, so that is a pass: the
// replay's exit code mirrors the agent's, which may be 3, 5 or 6 too.
func reproducedEnd(code int, stdout []byte) bool {
	var res engine.Result
	if code <= 0 || json.Unmarshal(stdout, &res) != nil || res.Unreadable != "" || res.Breaker != nil ||
		res.ExitSame == nil || !*res.ExitSame || res.NotReproduced() != "" {
		return false
	}
	return code == res.End.ExitCode || (code == ExitInterrupted && res.Interrupted != nil)
}

// recordedAlike says whether a --record-mode run that exited code (not
// 0) ended, by its --json result, as the tape now at path (the new one
// when it superseded the old) recorded, with every call reaching its
// upstream: an agent recorded failing that failed alike.
func recordedAlike(code int, stdout []byte, path string) bool {
	var res engine.Result
	if code <= 0 || json.Unmarshal(stdout, &res) != nil || res.LiveFailed > 0 {
		return false
	}
	end, err := recordedEnd(path)
	return err == nil && end.ExitCode == res.End.ExitCode && end.Signal == res.End.Signal
}

// whereItFailed says in one line where a replay failed: its divergence
// (from --json), else the error it ended with (its last "jukebox: " line).
func whereItFailed(stdout []byte, stderr string) string {
	var res engine.Result
	if json.Unmarshal(stdout, &res) == nil && res.Divergence != nil {
		d := res.Divergence
		if d.Path != "" && d.Frame >= 0 {
			return fmt.Sprintf("diverged %s, first at %s", d.Where(), d.Path)
		}
		return "diverged " + d.Where()
	}
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l, ok := strings.CutPrefix(lines[i], "jukebox: "); ok && !strings.HasPrefix(l, "note:") {
			return l
		}
	}
	return lastLines(stderr, 1)
}

// lastLines is s's last n lines.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// limitedBuffer keeps the last max bytes or so written to it: an agent
// that prints without end cannot fill the memory.
type limitedBuffer struct {
	max int
	b   *bytes.Buffer
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.b.Write(p)
	if over := l.b.Len() - l.max; over > 0 {
		l.b.Next(over)
	}
	return len(p), nil
}
