package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// summarize runs testsum over a recorded `go test -json` stream.
func summarize(t *testing.T, name string) (string, *summary) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	s := &summary{out: &out, output: map[key][]string{}, elapsed: map[key]float64{}}
	if err := s.read([]io.Reader{f}); err != nil {
		t.Fatal(err)
	}
	s.report()
	return out.String(), s
}

// TestTwoInputs: two go test streams read together (.ci/test runs the
// cloud drivers' build tags beside the rest) that run the same package:
// its end in one does not end the other's tests still running, and every
// line of both is read.
func TestTwoInputs(t *testing.T) {
	ev := func(action, test string) event { return event{Action: action, Package: "example.com/m/p", Test: test} }
	var out bytes.Buffer
	s := &summary{out: &out, output: map[key][]string{}, elapsed: map[key]float64{}}
	s.add(1, ev("run", "TestB"))
	for _, e := range []event{ev("run", "TestA"), ev("pass", "TestA"), ev("pass", "")} {
		s.add(0, e)
	}
	s.add(1, ev("pass", "TestB"))
	s.add(1, ev("pass", ""))
	if s.pass != 2 || s.fail != 0 || len(s.running) != 0 {
		t.Errorf("%d passed, %d failed, %v running; want 2, 0, none", s.pass, s.fail, s.running)
	}
	line := func(e event) string { b, _ := json.Marshal(e); return string(b) + "\n" }
	var a, b strings.Builder
	for i := range 300 {
		a.WriteString(line(ev("run", fmt.Sprint("TestA", i))) + line(ev("pass", fmt.Sprint("TestA", i))))
		b.WriteString(line(ev("run", fmt.Sprint("TestB", i))) + line(ev("pass", fmt.Sprint("TestB", i))))
	}
	s = &summary{out: &out, output: map[key][]string{}, elapsed: map[key]float64{}}
	if err := s.read([]io.Reader{strings.NewReader(a.String()), strings.NewReader(b.String())}); err != nil {
		t.Fatal(err)
	}
	if s.pass != 600 || s.fail != 0 {
		t.Errorf("read %d passed, %d failed of two inputs of 300 each", s.pass, s.fail)
	}
}

// TestTimeoutNamesTheRunningTest: a package that hit go test's -timeout
// printed "=== failed" with nothing under it and "0 failed": the test
// that hung, its output and every goroutine's stack were lost. They are
// shown now, and the hung test counts as failed.
func TestTimeoutNamesTheRunningTest(t *testing.T) {
	out, s := summarize(t, "testdata/timeout.json")
	for _, want := range []string{"--- tt TestHang/HUP", "still running when the package ended", "a_test.go:4: waiting",
		"panic: test timed out after 3s", "goroutine 1 [chan receive]", "1 passed, 2 failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "--- tt TestFast") {
		t.Errorf("a passing test is listed as failed:\n%s", out)
	}
	if len(s.running) != 0 {
		t.Errorf("tests left running after their package ended: %v", s.running)
	}
}

// TestRunJobs: -run runs each job's binary under test2json in its folder
// with the flags given and its own, prints go test's result line for each
// package as its binary ends, and fails a package whose process failed
// though no event said so (a binary that did not start, a test2json
// that could not run it).
func TestRunJobs(t *testing.T) {
	dir := t.TempDir()
	// A test2json of the test's own: -p PKG BINARY -test.v=test2json
	// FLAG...; what it prints depends on the binary's name.
	t2j := dir + "/test2json"
	script := `#!/bin/sh
pkg=$2 bin=$3
shift 4
ev() { printf '{"Action":"%s","Package":"%s","Test":"%s"%s}\n' "$1" "$pkg" "$2" "$3"; }
ev output "" ',"Output":"in '"$(basename "$PWD")"' with '"$*"'\n"'
case $bin in
pass) ev run TestA; ev output TestA ',"Output":"--- PASS: TestA (2.50s)\n"'; ev pass TestA; ev pass "" ;;
fail) ev run TestB; ev output TestB ',"Output":"b_test.go:3: wrong\n"'; ev fail TestB; ev fail ""; exit 1 ;;
*) echo "no such binary: $bin" >&2; exit 3 ;;
esac
`
	if err := os.WriteFile(t2j, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a", "b", "c"} {
		if err := os.Mkdir(dir+"/"+d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	jobs := []job{{pkg: "ex/a", dir: dir + "/a", bin: "pass"}, {pkg: "ex/b", dir: dir + "/b", bin: "fail", args: []string{"-test.run=^TestB$"}},
		{pkg: "ex/c", dir: dir + "/c", bin: "missing"}}
	var out bytes.Buffer
	s := &summary{out: &out, output: map[key][]string{}, elapsed: map[key]float64{}}
	s.run(jobs, runner{n: 2, t2j: t2j, flags: []string{"-test.timeout=1m"}, waitDelay: time.Minute})
	s.report()
	got := out.String()
	for _, want := range []string{"ok  \tex/a\t", "FAIL\tex/b\t", "FAIL\tex/c\t", "b_test.go:3: wrong", "in b with -test.timeout=1m -test.run=^TestB$",
		"--- ex/c (package)", "missing: exit status 3: no such binary: missing", "1 passed, 2 failed", "slowest: ex/a TestA 2.5s"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "in a with") {
		t.Errorf("a passing package's output is shown:\n%s", got)
	}
	if len(s.failed) != 3 {
		t.Errorf("failed: %v; want ex/b's TestB and package, and ex/c", s.failed)
	}
}

func TestReadJobs(t *testing.T) {
	name := t.TempDir() + "/jobs"
	os.WriteFile(name, []byte("# a comment\nex/a\t/src/a\t/bin/a.test\n\nex/b\t/src/b\t/bin/b.test\t-test.run=X\t-test.v\n"), 0o644)
	jobs, err := readJobs(name)
	if err != nil || len(jobs) != 2 || jobs[1].bin != "/bin/b.test" || strings.Join(jobs[1].args, " ") != "-test.run=X -test.v" || len(jobs[0].args) != 0 {
		t.Fatalf("readJobs = %+v, %v", jobs, err)
	}
	os.WriteFile(name, []byte("ex/a /src/a /bin/a.test\n"), 0o644)
	if _, err := readJobs(name); err == nil || !strings.Contains(err.Error(), ":1: want IMPORTPATH") {
		t.Errorf("a line without tabs: %v", err)
	}
}

// TestRunJobsThatDoNotEnd: a test binary that never ends (a TestMain that
// hangs before its tests' own -timeout runs) is killed with what it
// started at -timeout, and one that exits leaving a process that holds
// its output open is waited for -waitdelay only: each fails its package
// with the reason, and the run ends (it hung for ever before).
func TestRunJobsThatDoNotEnd(t *testing.T) {
	dir := t.TempDir()
	t2j := dir + "/test2json"
	script := `#!/bin/sh
pkg=$2 bin=$3
case $bin in
hang) sleep 30 ;;
leaves) sleep 30 & printf '{"Action":"pass","Package":"%s"}\n' "$pkg"; exit 0 ;;
esac
`
	if err := os.WriteFile(t2j, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	jobs := []job{{pkg: "ex/hang", dir: dir, bin: "hang"}, {pkg: "ex/leaves", dir: dir, bin: "leaves"}}
	var out bytes.Buffer
	s := &summary{out: &out, output: map[key][]string{}, elapsed: map[key]float64{}}
	s.run(jobs, runner{n: 2, t2j: t2j, timeout: 2 * time.Second, waitDelay: time.Second})
	s.report()
	got := out.String()
	for _, want := range []string{"FAIL\tex/hang\t", "killed 2s after it started, with what it started: it did not end",
		"FAIL\tex/leaves\t", "its output was still open 1s after it exited", "0 passed, 2 failed"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}

// TestLongestFirst: with the times of a run before, jobs run longest
// first, those of no known time (new ones) before them in the file's
// order; the times of the jobs that ended are kept for the next run, and
// a times file that cannot be read is an error naming its line.
func TestLongestFirst(t *testing.T) {
	a, b := job{pkg: "ex/a"}, job{pkg: "ex/b", args: []string{"-test.run=^TestB$"}}
	c, d := job{pkg: "ex/c"}, job{pkg: "ex/b", args: []string{"-test.run=^TestC$"}}
	name := filepath.Join(t.TempDir(), "times")
	times, err := readTimes(name)
	if err != nil || len(times) != 0 {
		t.Fatalf("no file yet: %v, %v", times, err)
	}
	if got := longestFirst([]job{a, b, c, d}, times); !slices.EqualFunc(got, []job{a, b, c, d}, sameJob) {
		t.Errorf("no times: %v, want the file's order", got)
	}
	if err := writeTimes(name, []job{a, b, c, d}, map[int]time.Duration{0: 2 * time.Second, 1: 90 * time.Second, 3: 500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if times, err = readTimes(name); err != nil || len(times) != 3 || times[jobKey(b)] != 90 || times[jobKey(d)] != 0.5 {
		t.Fatalf("times kept: %v, %v", times, err)
	}
	if got := longestFirst([]job{a, b, c, d}, times); !slices.EqualFunc(got, []job{c, b, a, d}, sameJob) {
		t.Errorf("ordered: %v, want c (no time), b, a, d", got)
	}
	os.WriteFile(name, []byte("2.000\tex/a\t\nlong\tex/b\t\n"), 0o644)
	if _, err := readTimes(name); err == nil || !strings.Contains(err.Error(), name+":2: want SECONDS") {
		t.Errorf("a line that is no time: %v", err)
	}
}

func sameJob(x, y job) bool { return jobKey(x) == jobKey(y) }
