package engine

import (
	"fmt"
	"slices"
	"strings"
)

// minEnvValue is the shortest value of a variable taken as the source of a
// difference: shorter ones ("1", "dev") turn up in requests by chance.
const minEnvValue = 4

// notAgentEnv are variables whose values are jukebox's own or the shell's,
// never an input of the agent worth naming.
var notAgentEnv = map[string]bool{"PWD": true, "OLDPWD": true, "SHLVL": true, "_": true, "HOME": true,
	"PATH": true, "TERM": true, "LANG": true, "SHELL": true, "USER": true, "LOGNAME": true}

// envChanged names the variables of recorded (run.start's env: the ones
// a run is described by) that now has otherwise or not at all, sorted;
// jukebox's own, TERM and the providers' base URLs (a replay sets them
// to its own, whatever they were) are left out.
func envChanged(recorded map[string]string, now []string) []string {
	cur := envMap(now)
	var names []string
	for name, v := range recorded {
		if got, ok := cur[name]; (!ok || got != v) && name != "TERM" && !strings.HasPrefix(name, "JUKEBOX_") && !baseURLEnv(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// baseURLEnv reports whether name is a variable the providers' SDKs read
// their base URL from.
func baseURLEnv(name string) bool {
	for _, p := range providers {
		if slices.Contains(p.BaseEnv, name) {
			return true
		}
	}
	return false
}

// envSuspects names the variables the differing values of a divergence
// came from: those whose value in this run's environment the live request
// holds and the recorded one does not, and those whose recorded value
// (run.start env) the recorded request holds and the live one does not,
// now unset or set otherwise. Names only, sorted: never a value, which may
// be a secret.
func envSuspects(expected, actual string, recorded map[string]string, now []string) []string {
	var names []string
	cur := envMap(now)
	consider := func(name, v string) bool {
		return len(v) >= minEnvValue && !notAgentEnv[name] && !strings.HasPrefix(name, "JUKEBOX_") && !slices.Contains(names, name)
	}
	for name, v := range cur {
		if consider(name, v) && strings.Contains(actual, v) && !strings.Contains(expected, v) {
			names = append(names, name)
		}
	}
	for name, v := range recorded {
		if consider(name, v) && cur[name] != v && strings.Contains(expected, v) && !strings.Contains(actual, v) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// diffSides splits a unified diff (diffview.TextDiff) into the lines only
// the recorded side has and those only the live side has.
func diffSides(diff string) (recorded, live string) {
	var rec, liv strings.Builder
	for line := range strings.Lines(diff) {
		switch {
		case strings.HasPrefix(line, "---"), strings.HasPrefix(line, "+++"):
		case strings.HasPrefix(line, "-"):
			rec.WriteString(line[1:])
		case strings.HasPrefix(line, "+"):
			liv.WriteString(line[1:])
		}
	}
	return rec.String(), liv.String()
}

// envText is the sentence Divergence.Error adds for Env.
func envText(names []string) string {
	if len(names) == 0 {
		return ""
	}
	vars := "$" + strings.Join(names, ", $")
	return fmt.Sprintf("\nthe differing values come from the environment (%s): the agent read them from variables "+
		"set otherwise than when it was recorded; replay with them as they were then", vars)
}
