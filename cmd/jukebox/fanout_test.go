package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// fanAsync sends 20 identical chat calls at once with asyncio and httpx,
// and prints each caller's answer in call order.
const fanAsync = `import asyncio, os, httpx
async def main():
    async with httpx.AsyncClient(base_url=os.environ["OPENAI_BASE_URL"], timeout=30) as c:
        body = {"model": "demo-small", "messages": [{"role": "user", "content": "same"}]}
        rs = await asyncio.gather(*[c.post("/chat/completions", json=body, headers={"Authorization": "Bearer sk"}) for _ in range(20)])
        for i, r in enumerate(rs):
            print(i, r.json()["choices"][0]["message"]["content"])
asyncio.run(main())
`

// fanThreads does the same from a pool of 20 threads (urllib), and
// prints one line more when EXTRA is set.
const fanThreads = `import os, json, urllib.request
from concurrent.futures import ThreadPoolExecutor
def call(i):
    body = json.dumps({"model": "demo-small", "messages": [{"role": "user", "content": "same"}]}).encode()
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body, {"Content-Type": "application/json", "Authorization": "Bearer sk"})
    return json.load(urllib.request.urlopen(req))["choices"][0]["message"]["content"]
with ThreadPoolExecutor(20) as ex:
    for i, r in enumerate(ex.map(call, range(20))):
        print(i, r)
if os.environ.get("EXTRA"):
    print("one line more")
`

// TestFanOutReplay is issue 31's "fan-outs of identical calls still
// shuffle": 20 identical parallel calls, each answered differently when
// recorded, from asyncio with httpx and from a thread pool. Their
// identical requests reach jukebox in an order timing decides (httpx
// reuses a connection whose answer came first), so replay --strict takes
// the answers of identical requests as interchangeable and passes every
// time, and still fails on output that differs otherwise.
func TestFanOutReplay(t *testing.T) {
	t.Parallel()
	py := testenv.RequirePythonModule(t, "httpx")
	var rules []map[string]any
	for i := range 20 {
		rules = append(rules, map[string]any{"name": fmt.Sprint("r", i), "times": 1, "reply": map[string]any{"text": fmt.Sprintf("answer number %d", i)}})
	}
	js, _ := json.Marshal(map[string]any{"version": 1, "defaults": map[string]any{"delay_ms": 5}, "rules": rules})
	dir := t.TempDir()
	run := func(extra string, args ...string) (string, string, int) {
		return jbIn(dir, []string{"EXTRA=" + extra}, args...)
	}
	for name, src := range map[string]string{"async": fanAsync, "threads": fanThreads} {
		srv := scriptedModel(t, string(js))
		agent := filepath.Join(dir, name+".py")
		must(t, os.WriteFile(agent, []byte(src), 0o644))
		tape := filepath.Join(dir, name+".jbx")
		if _, errs, code := run("", "record", "-o", tape, "--upstream", "openai="+srv.OpenAIBaseURL(), "--", py, agent); code != ExitOK {
			t.Fatalf("%s: record: exit %d\n%s", name, code, errs)
		}
		for range 3 {
			_, errs, code := run("", "replay", "--strict", tape, "--", py, agent)
			if code != ExitOK {
				t.Fatalf("%s: replay --strict: exit %d\n%s", name, code, errs)
			}
		}
	}
	_, errs, code := run("1", "replay", "--strict", filepath.Join(dir, "threads.jbx"), "--", py, filepath.Join(dir, "threads.py"))
	if code != ExitDiffers || !strings.Contains(errs, "one line more") {
		t.Fatalf("threads printing a line more: replay --strict exit %d, want %d\n%s", code, ExitDiffers, errs)
	}
}
