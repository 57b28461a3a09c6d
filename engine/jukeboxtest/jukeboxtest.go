// Package jukeboxtest runs agents under replay of their tapes in go test:
// the Go counterpart of jukebox test and of the pytest plugin. A test
// replays a tape kept in testdata/tapes/ strictly (nothing leaves the
// machine) and fails with the first divergence, or with what the run did
// not reproduce (its output, its exit, a recorded call never asked for).
//
//	func TestAgent(t *testing.T) {
//		jukeboxtest.Replay(t, "triage.jbx", jukeboxtest.Command("python", "agent.py"))
//	}
//
// A Go agent, whose calls are made by the test's own process, records and
// replays them through a Recorder (NewRecorder), an http.RoundTripper
// onto the same .jbx tapes.
package jukeboxtest

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
)

// TapesDir is where Replay looks for a tape named without a folder.
const TapesDir = "testdata/tapes"

// Option changes how Replay runs the agent.
type Option func(*engine.ReplayOptions)

// Command runs argv instead of the command the tape recorded.
func Command(argv ...string) Option {
	return func(o *engine.ReplayOptions) { o.Argv = argv }
}

// Dir runs the agent in dir (default: the test's working directory, the
// package's folder).
func Dir(dir string) Option {
	return func(o *engine.ReplayOptions) { o.Dir = dir }
}

// IgnoreOutput adds patterns (Go regexp) whose matches in each line of
// stdout are replaced by "…" before it is compared with the recording's
// (timings, dates), as replay --ignore-output does.
func IgnoreOutput(patterns ...string) Option {
	return func(o *engine.ReplayOptions) { o.IgnoreOutput = append(o.IgnoreOutput, patterns...) }
}

// Env sets the agent's environment (KEY=VALUE), in place of the test's.
func Env(env ...string) Option {
	return func(o *engine.ReplayOptions) { o.Env = env }
}

// Replay runs the agent again with every model and HTTP call answered from
// tape (a path, or a file name in testdata/tapes/), strictly, and fails t
// unless the run reproduced the recording. The agent's output is logged
// when it did not. It returns the run's result for further checks.
func Replay(t testing.TB, tape string, opts ...Option) *engine.Result {
	t.Helper()
	path, err := find(tape)
	if err != nil {
		t.Fatalf("jukeboxtest: %v", err)
		return nil
	}
	var out bytes.Buffer
	o := engine.ReplayOptions{From: path, RunOptions: engine.RunOptions{Stdout: &out, Stderr: &out, QuietSDKs: true}}
	for _, opt := range opts {
		opt(&o)
	}
	res, err := engine.Replay(t.Context(), o)
	switch {
	case err != nil && res == nil:
		t.Fatalf("jukeboxtest: replay of %s: %v\n%s", path, err, out.Bytes())
		return nil
	case err != nil:
		t.Errorf("jukeboxtest: replay of %s: %v", path, err)
	}
	if why := res.NotReproduced(); why != "" {
		msg := why
		if res.Divergence != nil {
			msg = res.Divergence.Error()
		}
		t.Errorf("jukeboxtest: %s: the run did not reproduce the recording: %s\nagent output:\n%s", path, msg, out.Bytes())
	}
	return res
}

// find is tape as a path, else the file of that name in TapesDir.
func find(tape string) (string, error) {
	if _, err := os.Stat(tape); err == nil || filepath.Dir(tape) != "." {
		return tape, err
	}
	p := filepath.Join(TapesDir, tape)
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return "", errors.New(tape + ": no such tape, here or in " + TapesDir)
	}
	return p, nil
}
