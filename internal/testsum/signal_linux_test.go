package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand for testsum in TestTestsGetSIGINT:
// test2json starts it with execTestArg to start the test binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == execTestArg {
		execTest(os.Args[2:])
		os.Exit(127)
	}
	os.Exit(m.Run())
}

// TestTestsGetSIGINT: test2json ignores SIGINT and SIGQUIT, and a test
// binary it started inherited them ignored, and so did every agent its
// tests started: an interrupt test's agent never saw its Ctrl-C and was
// killed at the end of its grace. testsum starts the binary through
// itself, with both at their default, as go test does.
func TestTestsGetSIGINT(t *testing.T) {
	dir := t.TempDir()
	// A test2json that ignores them as the real one does, and a test
	// binary that says what it ignores.
	t2j, bin := dir+"/test2json", dir+"/sig.test"
	os.WriteFile(t2j, []byte("#!/bin/sh\ntrap '' INT QUIT\nshift 2\nexec \"$@\"\n"), 0o755)
	os.WriteFile(bin, []byte(`#!/bin/sh
ign=$(awk '/^SigIgn/ { print $2 }' /proc/$$/status)
printf '{"Action":"output","Package":"ex/sig","Output":"ignored %s\\n"}\n{"Action":"fail","Package":"ex/sig"}\n' "$ign"
exit 1
`), 0o755)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s := &summary{out: &out, output: map[key][]string{}, elapsed: map[key]float64{}}
	s.run([]job{{pkg: "ex/sig", dir: dir, bin: bin}}, runner{n: 1, t2j: t2j, self: self, waitDelay: time.Minute})
	s.report()
	got := out.String()
	_, mask, ok := strings.Cut(got, "ignored ")
	ignored, err := strconv.ParseUint(strings.Fields(mask + " ")[0], 16, 64)
	if !ok || err != nil {
		t.Fatalf("the test binary's signals are not in the summary:\n%s", got)
	}
	// SIGINT is 2, SIGQUIT 3: bits 1 and 2. Others may be ignored by
	// whoever started the test (nohup ignores SIGHUP).
	if ignored&0b110 != 0 {
		t.Errorf("the test binary starts with SIGINT or SIGQUIT ignored (mask %#x):\n%s", ignored, got)
	}
}
