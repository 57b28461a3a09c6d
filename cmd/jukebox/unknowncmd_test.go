package main

import (
	"strings"
	"testing"
)

// TestUnknownCommandNamesTheCommands: a word that names no command and is
// close to none gets the commands there are, with exit 2. `jukebox booth
// list` said "unexpected argument list" alone (booth's default command,
// status, takes no argument).
func TestUnknownCommandNamesTheCommands(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"booth", "list"}, "unexpected argument list (jukebox booth takes one of: status, diff, commit, rollback"},
		{[]string{"frobnicate"}, "unexpected argument frobnicate (jukebox takes one of: play, demo, record, replay"},
		{[]string{"cache", "foo"}, "unexpected argument foo (jukebox cache takes one of: info, prune)"},
		{[]string{"booth", "stat"}, `unexpected argument stat, did you mean "status"?`},
	} {
		code, _, errs := jb(t, c.args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("jukebox %s: exit %d, stderr %q; want exit %d and %q", strings.Join(c.args, " "), code, errs, ExitUsage, c.want)
		}
	}
}
