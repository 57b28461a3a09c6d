package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLsFilters (issue 35 item 7): ls --recursive lists subfolders (not
// the tapes' sidecar folders), --name, --since and --limit keep what they
// say, newest first, and bad values are usage errors naming the flag.
func TestLsFilters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, r := range []struct{ sub, name string }{{"", "triage"}, {"2026-12-04", "triage"}, {"2026-12-05", "billing"}} {
		folder := filepath.Join(dir, r.sub)
		os.MkdirAll(folder, 0o755)
		if _, errs, code := jbIn(folder, nil, "record", "--name", r.name, "-o", filepath.Join(folder, r.name+".jbx"), "--", "true"); code != 0 {
			t.Fatalf("record: exit %d\n%s", code, errs)
		}
	}
	os.MkdirAll(filepath.Join(dir, "triage.jbx.d", "deep"), 0o755)
	b, err := os.ReadFile(filepath.Join(dir, "triage.jbx"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "triage.jbx.d", "deep", "hidden.jbx"), b, 0o644)
	list := func(args ...string) []string {
		t.Helper()
		out, errs, code := jbIn(dir, nil, append([]string{"ls", "--json"}, args...)...)
		var rows []struct{ Path string }
		if err := json.Unmarshal([]byte(out), &rows); err != nil || code != 0 {
			t.Fatalf("ls %v: exit %d, %v\n%s%s", args, code, err, out, errs)
		}
		var got []string
		for _, r := range rows {
			got = append(got, filepath.ToSlash(filepath.Clean(r.Path)))
		}
		return got
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"."}, "triage.jbx"},
		{[]string{"-r", "."}, "2026-12-05/billing.jbx 2026-12-04/triage.jbx triage.jbx"},
		{[]string{"-r", "--name", "tri*", "."}, "2026-12-04/triage.jbx triage.jbx"},
		{[]string{"-r", "--limit", "1", "."}, "2026-12-05/billing.jbx"},
		{[]string{"-r", "--since", "1h", "."}, "2026-12-05/billing.jbx 2026-12-04/triage.jbx triage.jbx"},
		{[]string{"-r", "--since", time.Now().Add(time.Hour).Format(time.RFC3339), "."}, ""},
	} {
		// newest first: the records ran in this order, triage.jbx first
		if got := strings.Join(list(c.args...), " "); got != c.want {
			t.Errorf("ls %v: %q, want %q", c.args, got, c.want)
		}
	}
	for flag, arg := range map[string]string{"--since": "yesterday", "--limit": "-1", "--name": "[", "--tag": "=x"} {
		_, errs, code := jbIn(dir, nil, "ls", flag, arg, ".")
		if code != ExitUsage || !strings.Contains(errs, flag) {
			t.Errorf("ls %s %s: exit %d, want %d naming the flag\n%s", flag, arg, code, ExitUsage, errs)
		}
	}
}

// TestSinceSkipsEarlierDays: a folder named after a day wholly before
// --since is not read, in any of the usual partition forms.
func TestSinceSkipsEarlierDays(t *testing.T) {
	since := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	f := lsFilter{Since: since}
	for rel, skip := range map[string]bool{
		"2026-12-01/": true, "2026/12/01/": true, "runs/date=2026-12-01/": true,
		"2026-12-04/": false, "2026-12-05/": false, "2026-12-06/": false, "2026/": false, "team/": false, "x2026-12-01/": false,
	} {
		if got := f.before(rel); got != skip {
			t.Errorf("before(%q) = %v, want %v", rel, got, skip)
		}
	}
	if (lsFilter{}).before("2020-01-01/") {
		t.Error("without --since a dated folder is skipped")
	}
}
