package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that notes how the test was stopped instead of
// stopping it.
type recorder struct {
	testing.TB
	how, msg string
}

type stopped struct{}

func (r *recorder) Helper() {}
func (r *recorder) stop(how, msg string) {
	r.how, r.msg = how, msg
	panic(stopped{})
}
func (r *recorder) Fatal(args ...any)            { r.stop("fatal", fmt.Sprint(args...)) }
func (r *recorder) Fatalf(f string, args ...any) { r.stop("fatal", fmt.Sprintf(f, args...)) }
func (r *recorder) Skip(args ...any)             { r.stop("skip", fmt.Sprint(args...)) }
func (r *recorder) Skipf(f string, args ...any)  { r.stop("skip", fmt.Sprintf(f, args...)) }

// run calls f with a recorder and returns how it stopped ("" if it did not).
func run(f func(testing.TB)) (how, msg string) {
	r := &recorder{}
	defer func() {
		if v := recover(); v != nil && v != (stopped{}) {
			panic(v)
		}
		how, msg = r.how, r.msg
	}()
	f(r)
	return
}

func TestUnavailableSkipsOrFails(t *testing.T) {
	t.Setenv(envRequireAll, "")
	how, msg := run(func(tb testing.TB) { Unavailable(tb, "a thing", "get it") })
	if how != "skip" || msg != "needs a thing: get it" {
		t.Fatalf("without %s: %s %q", envRequireAll, how, msg)
	}
	t.Setenv(envRequireAll, "1")
	how, msg = run(func(tb testing.TB) { Unavailable(tb, "a thing", "get it") })
	if how != "fatal" || !strings.HasPrefix(msg, "needs a thing: get it") {
		t.Fatalf("with %s=1: %s %q", envRequireAll, how, msg)
	}
}

func TestRequirePostgres(t *testing.T) {
	t.Setenv(envRequireAll, "")
	t.Setenv(EnvPostgresDSN, "")
	if how, msg := run(func(tb testing.TB) { RequirePostgres(tb) }); how != "skip" || !strings.Contains(msg, ".ci/postgres.sh") {
		t.Fatalf("unset: %s %q", how, msg)
	}
	t.Setenv(EnvPostgresDSN, "postgres://x")
	var dsn string
	if how, _ := run(func(tb testing.TB) { dsn = RequirePostgres(tb) }); how != "" || dsn != "postgres://x" {
		t.Fatalf("set: %s %q", how, dsn)
	}
}

func TestSkipSDK(t *testing.T) {
	t.Setenv(envSkipSDK, "1")
	t.Setenv(envRequireAll, "")
	if how, _ := run(func(tb testing.TB) { RequireNode(tb) }); how != "skip" {
		t.Fatalf("%s=1 alone: %s", envSkipSDK, how)
	}
	t.Setenv(envRequireAll, "1")
	if how, _ := run(func(tb testing.TB) { RequireNode(tb) }); how != "fatal" {
		t.Fatalf("%s=1 with %s=1: %s", envSkipSDK, envRequireAll, how)
	}
}

func TestRepoRoot(t *testing.T) {
	root := repoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "internal", "testenv", "testenv.go")); err != nil {
		t.Fatalf("root %s: %v", root, err)
	}
}

// TestPythonFirst: the interpreter's folder goes first on PATH only when
// python3 on PATH is a script (a version manager's shim).
func TestPythonFirst(t *testing.T) {
	dir := t.TempDir()
	py := filepath.Join(dir, "python3")
	real := func() (string, error) { return "/opt/py/bin/python3", nil }
	t.Setenv("PATH", dir)
	if got := pythonFirst(real); got != "" {
		t.Errorf("no python3 on PATH: PATH %q", got)
	}
	if err := os.WriteFile(py, []byte("#!/bin/sh\nexec /opt/py/bin/python3 \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := pythonFirst(real), "/opt/py/bin"+string(os.PathListSeparator)+dir; got != want {
		t.Errorf("a shim on PATH: PATH %q, want %q", got, want)
	}
	if got := pythonFirst(func() (string, error) { return py, nil }); got != "" {
		t.Errorf("the shim is the interpreter: PATH %q", got)
	}
	if err := os.WriteFile(py, []byte("\x7fELF\x02\x01"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := pythonFirst(real); got != "" {
		t.Errorf("the interpreter itself on PATH: PATH %q", got)
	}
}
