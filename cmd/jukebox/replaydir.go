package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// dirHint adds to err, when a replay's agent did not start because its
// relative command (./agent.sh) is not in the folder the agent runs in,
// that the recording ran elsewhere and --dir runs it there. argv is the
// command given, or the recorded one when none was; dir is --dir.
func dirHint(err error, argv []string, dir string, rec *tapefmt.RunStart) error {
	if err == nil || dir != "" || rec == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if len(argv) == 0 {
		argv = rec.Argv
	}
	if len(argv) == 0 || filepath.IsAbs(argv[0]) || !strings.ContainsRune(argv[0], '/') {
		return err
	}
	cwd, _ := os.Getwd()
	if rec.Cwd == "" || rec.Cwd == cwd {
		return err
	}
	return fmt.Errorf("%w\njukebox: %s is looked for in the folder the agent runs in, the current one (%s); "+
		"the recording ran in %s: %s", err, argv[0], cwd, rec.Cwd, dirAdvice("replay with --dir %s", rec.Cwd))
}

// dirAdvice is how to replay in the recorded folder: advice (a format
// with the folder's place) when it is here, else to give --dir a folder
// that holds the agent's files.
func dirAdvice(advice, recorded string) string {
	if st, err := os.Stat(recorded); err != nil || !st.IsDir() {
		return "that folder is not here: replay with --dir FOLDER, a folder that holds the agent's files as they were"
	}
	return fmt.Sprintf(advice, termtext.ShellQuote(recorded))
}

// elsewhereNote says, when a replay ran the recorded command in another
// folder than the recording did (no --dir) and the agent ended otherwise,
// that a file the command names relatively (python agent.py) is looked
// for here and --dir runs it where it was recorded: the command itself
// was found, so dirHint had nothing to say.
func elsewhereNote(w io.Writer, dir string, cmd []string, rec *tapefmt.RunStart, res *engine.Result) {
	if dir != "" || len(commandArgs(cmd)) > 0 || rec == nil || rec.Cwd == "" || res == nil || res.ExitSame == nil || *res.ExitSame {
		return
	}
	cwd, _ := os.Getwd()
	if cwd == rec.Cwd {
		return
	}
	fmt.Fprintf(w, "jukebox: note: the recording ran in %s, this replay in %s: what the command names relatively is looked for here; "+
		"%s\n", termtext.Sanitize(rec.Cwd), termtext.Sanitize(cwd), dirAdvice("--dir %s replays it where it was recorded", rec.Cwd))
}

// commitNote says, when a replayed agent ended otherwise than the
// recorded one, which paths the recording's SDK commits changed that this
// replay, outside the booth, answered without committing
// (engine.Result.NotCommitted): an agent that reads back what it committed
// fails in a folder where they are not, and --booth puts them in its view.
func commitNote(w io.Writer, res *engine.Result) {
	if res == nil || len(res.NotCommitted) == 0 {
		return
	}
	paths := make([]string, 0, 3)
	for _, p := range res.NotCommitted[:min(3, len(res.NotCommitted))] {
		paths = append(paths, termtext.Quote(p))
	}
	if more := len(res.NotCommitted) - len(paths); more > 0 {
		paths = append(paths, fmt.Sprintf("%d more", more))
	}
	fmt.Fprintf(w, "jukebox: note: the recording's SDK transactions committed %s, which this replay answered from the tape without committing "+
		"(a replay outside the booth commits nothing): an agent that reads back what it committed does not find them unless they are here; "+
		"--booth puts them in its view\n", strings.Join(paths, ", "))
}

// envNote says, when a replayed agent ended otherwise than the recorded
// one, which of the variables the tape describes the run by (run.start's
// env: PYTHONPATH, VIRTUAL_ENV, PATH, the locale, AGENT_*) this replay has
// otherwise or not at all (engine.Result.EnvChanged): an agent started
// without its PYTHONPATH or virtual environment fails before its first
// call, and the replay's verdict alone says only that it exited
// otherwise. The note gives the recorded values, never this
// environment's; tape is the tape replayed, as given.
func envNote(w io.Writer, tape string, rec *tapefmt.RunStart, res *engine.Result) {
	if rec == nil || res == nil || len(res.EnvChanged) == 0 {
		return
	}
	var diffs []string
	for _, name := range res.EnvChanged {
		here := "set otherwise here"
		if _, ok := os.LookupEnv(name); !ok {
			here = "unset here"
		}
		// The recorded value is the tape's (what jukebox show prints, its
		// credentials masked when it was recorded), made safe for the
		// terminal and cut short; this environment's is never printed: it
		// may hold what the recording masked.
		value := termtext.ShellQuote(timeline.OneLine(rec.Env[name], 60))
		diffs = append(diffs, fmt.Sprintf("%s=%s (%s)", termtext.Sanitize(name), value, here))
	}
	what := "that value"
	if len(diffs) > 1 {
		what = "those values"
	}
	fmt.Fprintf(w, "jukebox: note: the recording ran with %s; the agent may need %s "+
		"(jukebox show %s --kind run.start --json has all it ran with)\n", strings.Join(diffs, ", "), what, termtext.ShellQuote(tape))
}

// outputFlags is --ignore-output, of record and replay.
type outputFlags struct {
	IgnoreOutput []string `sep:"none" name:"ignore-output" placeholder:"REGEX" help:"Before a replay compares the agent's stdout with the recording's, replace every match of REGEX (Go RE2) in each line by …: timings, dates. Repeatable. Given to record, written into the tape: every replay of it uses them."`
}

// validate checks that each pattern compiles.
func (f outputFlags) validate() error {
	for _, p := range f.IgnoreOutput {
		if _, err := regexp.Compile(p); err != nil {
			return withCode(ExitUsage, fmt.Errorf("--ignore-output %q: %v", p, err))
		}
	}
	return nil
}
