package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
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
