package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/kong"

	"github.com/jukebox-os/jukebox/diffview"
	"github.com/jukebox-os/jukebox/internal/tapegen"
	"github.com/jukebox-os/jukebox/internal/tapetest"
)

// diffCLI mounts DiffCmd as main's CLI does.
type diffCLI struct {
	Diff DiffCmd `cmd:"" help:"Compare two tapes."`
}

// jbDiff runs `jukebox diff ARGS` through parseAndRun, so exit codes map as
// in main, and returns the code, stdout and stderr.
func jbDiff(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader("")}
	var cli diffCLI
	p, err := kong.New(&cli, kong.Name("jukebox"), kong.Writers(&out, &errb), kong.Bind(env), withContext(t.Context()), withTapes(),
		kong.Exit(func(code int) { panic(exitPanic(code)) }))
	if err != nil {
		t.Fatal(err)
	}
	code := parseAndRun(p, append([]string{"diff"}, args...), env)
	return code, out.String(), errb.String()
}

// forkTape writes a run shaped like the sample tape with the given model
// (the sample's is gpt-4o-mini), as a fork at the first request would record
// it.
func forkTape(t *testing.T, model string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), model+".jbx")
	if err := tapegen.WriteFile(path, tapegen.Spec{Steps: 5, Chunks: 12, Model: model}); err != nil {
		t.Fatal(err)
	}
	tapetest.Verify(t, path)
	return path
}

var sample = filepath.Join("..", "..", "testdata", "tapes", "agent-run.jbx")

func TestDiffSideBySide(t *testing.T) {
	t.Setenv("COLUMNS", "")
	code, out, errs := jbDiff(t, forkTape(t, "gpt-4o-mini"), forkTape(t, "gpt-4o"), "--color=never")
	if code != ExitOK || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{
		"▶ first divergence: left frame 2 and right frame 2 (llm.request) differ",
		"POST /v1/chat/completions [-gpt-4o-mini-] stream",
		"POST /v1/chat/completions {+gpt-4o+} stream",
		"model: [-gpt-4o-mini-]", "model: {+gpt-4o+}",
		"cost ", "tokens ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for l := range strings.SplitSeq(out, "\n") {
		if n := len([]rune(l)); n > defaultDiffWidth {
			t.Fatalf("line of %d runes at the default width: %q", n, l)
		}
	}
}

func TestDiffIdenticalAndSameFile(t *testing.T) {
	code, out, _ := jbDiff(t, sample, sample, "--unified", "--color=never")
	if code != ExitOK || !strings.Contains(out, "= the timelines agree frame for frame") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestDiffJSON(t *testing.T) {
	code, out, _ := jbDiff(t, forkTape(t, "gpt-4o-mini"), forkTape(t, "gpt-4o"), "--json")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	var rep diffview.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	d := rep.Divergence
	if rep.Equal || d == nil || d.Op != diffview.Changed || d.Left != 2 || d.Right != 2 || d.Kind != "llm.request" {
		t.Fatalf("divergence %+v", d)
	}
	if rep.Left.Totals.Calls != 5 || rep.Right.Totals.Steps != 5 || rep.Delta.Cost <= 0 || len(rep.Pairs) == 0 {
		t.Fatalf("totals %+v / %+v, delta %+v, %d pairs", rep.Left.Totals, rep.Right.Totals, rep.Delta, len(rep.Pairs))
	}
}

func TestDiffUnified(t *testing.T) {
	code, out, _ := jbDiff(t, forkTape(t, "gpt-4o-mini"), forkTape(t, "gpt-4o"), "--unified", "--color=always")
	if code != ExitOK || !strings.Contains(out, "~     2     2  ") || !strings.Contains(out, "\x1b[32mgpt-4o\x1b[0m") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestDiffExitCodes(t *testing.T) {
	dir := t.TempDir()
	notTape := filepath.Join(dir, "notes.txt")
	os.WriteFile(notTape, []byte(strings.Repeat("not a tape\n", 30)), 0o644)
	torn := filepath.Join("..", "..", "testdata", "tapes", "torn.jbx")
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"not a tape", []string{sample, notTape}, ExitBadTape},
		{"missing file", []string{sample, filepath.Join(dir, "nope.jbx")}, ExitUsage},
		{"one tape", []string{sample}, ExitUsage},
		{"json and unified", []string{sample, sample, "--json", "--unified"}, ExitUsage},
		{"narrow", []string{sample, sample, "--width", "20"}, ExitUsage},
		// Taken and ignored (or refused for the view not asked for).
		{"width and unified", []string{sample, sample, "--unified", "--width", "100"}, ExitUsage},
		{"width and json", []string{sample, sample, "--json", "--width", "100"}, ExitUsage},
		{"bad colour", []string{sample, sample, "--color", "sometimes"}, ExitUsage},
		{"torn tape", []string{sample, torn, "--color=never"}, ExitOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := jbDiff(t, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, out, errs)
			}
			if c.name == "torn tape" && (!strings.Contains(errs, "warning: ") || !strings.Contains(out, "first divergence")) {
				t.Fatalf("torn: stderr %q\n%s", errs, out)
			}
		})
	}
}
