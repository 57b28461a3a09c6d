package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// tripAgent spends until the breaker refuses a call (HTTP 400), then
// reports a turn, which the SDK refuses with BreakerTripped.
const tripAgent = `
import json, os, urllib.error, urllib.request
from jukebox import Jukebox, BreakerTripped
jb = Jukebox()
def ask(q):
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", method="POST",
        data=json.dumps({"model": "demo-large", "max_tokens": 100, "messages": [{"role": "user", "content": q}]}).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer sk-test"})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req) as r:
        return json.load(r)
for i in range(50):
    try:
        ask("tell me about %d " % i + "words " * 300)
    except urllib.error.HTTPError as e:
        print("HTTP", e.code)
        break
try:
    with jb.record_agent_turn(agent_name="x", message="after") as tx:
        print("turn ran")
except BreakerTripped as e:
    print("BreakerTripped:", e.rule, len(e.evidence) > 0, e.cost, e.evidence)
`

// TestSDKBreakerTripReplays: seen, an SDK agent whose run the breaker
// tripped raised BreakerTripped when recorded, and on replay the check
// before its turn passed (a replay has no breaker), the turn went on and
// failed with "the tape holds no transaction to answer this from (it was
// recorded before jukebox kept control-API exchanges...)", false of a
// tape this jukebox had just written; replay --strict exited 6. The
// replay now tells the agent what the recording told it once it reaches
// the refused call: the same BreakerTripped, the same output, its cost
// and evidence included (they were 0 and [] in the replay: --strict
// failed on the agent's output).
func TestSDKBreakerTripReplays(t *testing.T) {
	t.Parallel()
	python := testenv.RequirePython(t)
	url, stop, _ := startDemoModel(t, &DemoModelCmd{Addr: "127.0.0.1:0", Quiet: true})
	t.Cleanup(func() { stop() })
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "agent.py"), []byte(tripAgent), 0o644))
	env := append(os.Environ(), mainEnv+"=1", "JUKEBOX_BIN="+jukeboxBin(), pyCompiled,
		"PYTHONPATH="+filepath.Join(testenv.RepoRoot(t), "python"), "OPENAI_BASE_URL="+url+"/v1", "OPENAI_API_KEY=sk-test")
	out, code := runIn(t, dir, env, "record", "--max-cost", "0.0001", "-o", "rec.jbx", "--", python, "agent.py")
	if !strings.Contains(out, "HTTP 400") || !strings.Contains(out, "BreakerTripped: cost True") {
		t.Fatalf("record: exit %d\n%s", code, out)
	}
	out, code = runIn(t, dir, env, "replay", "--strict", "rec.jbx")
	if code != 0 || !strings.Contains(out, "BreakerTripped: cost True") {
		t.Fatalf("replay --strict: exit %d\n%s", code, out)
	}
}
