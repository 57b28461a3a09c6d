package engine

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPooledServerKeysTheRunsVariables: the Python SDK reuses a `jukebox
// serve` only for a process whose values of the variables a run's tape
// records (runStartEnv) are the server's (python/jukebox/_pool.py,
// _KEY_VARS and _KEY_PREFIXES): a name added here and not there would be
// recorded from the process that started the server, not the run's.
func TestPooledServerKeysTheRunsVariables(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "python", "jukebox", "_pool.py"))
	if err != nil {
		t.Fatal(err)
	}
	block := func(name string) []string {
		m := regexp.MustCompile(`(?s)\n` + name + ` = [^\n]*\((.*?)\)\)?\n`).FindSubmatch(src)
		if m == nil {
			t.Fatalf("_pool.py: no %s", name)
		}
		var out []string
		for _, q := range regexp.MustCompile(`"([A-Za-z_]+)"`).FindAllSubmatch(m[1], -1) {
			out = append(out, string(q[1]))
		}
		return out
	}
	vars, prefixes := block("_KEY_VARS"), block("_KEY_PREFIXES")
	keyed := func(k string) bool {
		if strings.HasSuffix(k, "_BASE_URL") {
			return true
		}
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				return true
			}
		}
		for _, v := range vars {
			if v == k {
				return true
			}
		}
		return false
	}
	for k := range allowedEnv {
		if !keyed(k) {
			t.Errorf("%s is on a run's tape (allowedEnv) but not in _pool.py's _KEY_VARS", k)
		}
	}
	for _, k := range []string{"LC_ALL", "JUKEBOX_X", "AGENT_X"} { // runStartEnv's prefixes
		if !keyed(k) {
			t.Errorf("%s is on a run's tape (runStartEnv) but not in _pool.py's _KEY_PREFIXES", k)
		}
	}
	if len(vars) < 5 || len(prefixes) < 3 {
		t.Errorf("_pool.py: read %v and %v: the pattern no longer finds the sets", vars, prefixes)
	}
}
