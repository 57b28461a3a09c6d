package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestJSONOfAnAgentThatCannotStart: record --json and replay --json of a
// command that cannot start print the run's result (its tape, and end
// with exit -1 and why), as docs/json.md says end always is; they
// printed nothing, exit 1.
func TestJSONOfAnAgentThatCannotStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	doc := jsonDoc(t)
	for _, args := range [][]string{
		{"record", "--json", "-o", "nocmd.jbx", "--", "./nonexistent"},
		{"replay", "--json", "nocmd.jbx"},
	} {
		out, errs, code := jbIn(dir, nil, args...)
		var res struct {
			End struct {
				ExitCode int    `json:"exit_code"`
				Error    string `json:"error"`
			} `json:"end"`
		}
		if code != ExitInternal || json.Unmarshal([]byte(out), &res) != nil || res.End.ExitCode != -1 || !strings.Contains(res.End.Error, "nonexistent") {
			t.Errorf("%v: exit %d, stdout %q\n%s", args, code, out, errs)
			continue
		}
		checkShape(t, doc, args[0], out, map[string]map[string]bool{})
	}
}

// TestLsJSONOfATapeThatDoesNotOpen: ls --json gives a tape that does not
// open its tape, path and error alone, as docs/json.md says; it filled in
// a start in year 1, a duration, zero calls and cost, and damaged false.
// ls exits 3 for it (it exited 0).
func TestLsJSONOfATapeThatDoesNotOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "x.jbx"), nil, 0o644))
	out, errs, code := jbIn(dir, nil, "ls", "--json", ".")
	var rows []map[string]any
	if code != ExitBadTape || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 1 {
		t.Fatalf("ls --json: exit %d\n%s%s", code, out, errs)
	}
	if keys := slices.Sorted(maps.Keys(rows[0])); !slices.Equal(keys, []string{"error", "path", "tape"}) {
		t.Errorf("the row of a tape that does not open has %v", keys)
	}
}
