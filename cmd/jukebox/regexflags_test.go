package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRegexFlagsKeepCommas: a regular expression with a comma given to
// --redact or --ignore-output is one pattern. Such flags were split at
// commas: --redact 'SECRET[0-9]{2,4}' became SECRET[0-9]{2 and 4}, which
// both parse and match nothing, and the secret stayed on the tape
// without a word. An empty --redact pattern was dropped without a word
// too.
func TestRegexFlagsKeepCommas(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, errs, code := jbIn(dir, nil, "record", "--redact", "SECRET[0-9]{2,4}", "-o", "r.jbx", "--", "echo", "SECRET123")
	if code != ExitOK {
		t.Fatalf("record --redact: exit %d\n%s", code, errs)
	}
	data, err := os.ReadFile(filepath.Join(dir, "r.jbx"))
	must(t, err)
	if bytes.Contains(data, []byte("SECRET123")) {
		t.Errorf("--redact 'SECRET[0-9]{2,4}' left the secret on the tape")
	}
	// A timing in the output, of one to three digits: the recording's and
	// the replay's differ, and compare equal through the pattern.
	_, errs, code = jbIn(dir, nil, "record", "--ignore-output", "took [0-9]{1,3} ms", "-o", "o.jbx", "--", "echo", "took 12 ms")
	if code != ExitOK {
		t.Fatalf("record --ignore-output: exit %d\n%s", code, errs)
	}
	if _, errs, code = jbIn(dir, nil, "replay", "--strict", "o.jbx", "--", "echo", "took 345 ms"); code != ExitOK {
		t.Errorf("replay --strict with the recorded 'took [0-9]{1,3} ms': exit %d\n%s", code, errs)
	}
	if _, errs, code = jbIn(dir, nil, "record", "--redact", "", "--", "true"); code != ExitUsage || !strings.Contains(errs, "an empty pattern masks nothing") {
		t.Errorf("record --redact '': exit %d\n%s", code, errs)
	}
}
