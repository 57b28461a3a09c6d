package main

import (
	"bufio"
	"bytes"
	"encoding/json"
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
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Action != "" {
			s.add(e)
		}
	}
	s.report()
	return out.String(), s
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
