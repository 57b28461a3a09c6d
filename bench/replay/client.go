package main

// Issue 31's figures, whole process, each side run alternately:
//
//   - a Python agent (standard library urllib, each SSE stream read line by
//     line, as the OpenAI SDK reads it) making the 50 streamed calls,
//     replayed by engine.Replay, against the same agent and a no-tape local
//     server serving the same bytes: within 1.15x;
//   - the Go agent without tool calls, the same two sides: within 1.05x;
//   - a short Go agent (5 calls) replayed by the jukebox binary (`jukebox
//     replay TAPE -- AGENT`), against the same agent replaying its own go-vcr
//     v4 cassette in its own process: no slower.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/jukebox-os/jukebox/bench/internal/benchutil"
	"github.com/jukebox-os/jukebox/internal/tapegen"
)

const (
	targetPython = 1.15
	targetGo     = 1.05
	targetVCR    = 1.0
	shortSteps   = 5
)

// pythonAgent is the Python agent: argv[1] is a JSON list of the steps'
// request and response bodies. Proxies are off (ProxyHandler({})), as the
// model is at OPENAI_BASE_URL on both sides.
const pythonAgent = `import json, os, sys, urllib.request

def main():
    with open(sys.argv[1], "rb") as f:
        steps = json.load(f)
    url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    headers = {"Content-Type": "application/json", "Accept": "application/json",
               "User-Agent": "OpenAI/Python 1.99.0"}
    for i, step in enumerate(steps):
        req = urllib.request.Request(url, data=step["request"].encode(), headers=headers, method="POST")
        lines = []
        with opener.open(req) as resp:
            for line in resp:
                lines.append(line)
        got = b"".join(lines)
        if got != step["response"].encode():
            sys.stderr.write("agent: step %d: %d bytes, not the %d recorded\n" % (i, len(got), len(step["response"])))
            return 1
    return 0

sys.exit(main())
`

// writePythonAgent writes the script and its steps into dir and returns its
// command line.
func writePythonAgent(dir string) ([]string, error) {
	py, err := exec.LookPath("python3")
	if err != nil {
		return nil, fmt.Errorf("the Python figure needs python3 on PATH: %w", err)
	}
	type step struct {
		Request  string `json:"request"`
		Response string `json:"response"`
	}
	var steps []step
	for _, in := range tapegen.Interactions(spec) {
		steps = append(steps, step{string(in.Request), string(in.Response)})
	}
	data, err := json.Marshal(steps)
	if err != nil {
		return nil, err
	}
	script, stepsFile := filepath.Join(dir, "agent.py"), filepath.Join(dir, "steps.json")
	if err := os.WriteFile(script, []byte(pythonAgent), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(stepsFile, data, 0o644); err != nil {
		return nil, err
	}
	return []string{py, script, stepsFile}, nil
}

// runClients measures issue 31's three figures.
func runClients(dir string, runs int) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	addr, stop, err := localServer()
	if err != nil {
		return err
	}
	defer stop()
	// Python and Go agents, 50 streamed calls: engine.Replay vs local server.
	py, err := writePythonAgent(dir)
	if err != nil {
		return err
	}
	plain := agentRun{steps: spec.Steps}
	for _, c := range []struct {
		name   string
		argv   []string
		target float64
		tape   string
	}{{"Python (urllib)", py, targetPython, "python.jbx"}, {"Go (net/http)", []string{exe}, targetGo, "go.jbx"}} {
		tape := filepath.Join(dir, c.tape)
		if err := writeAgentTape(tape, c.argv, plain); err != nil {
			return err
		}
		rm, lm, err := interleaved(runs, func() (time.Duration, error) { return replayAgent(tape, c.argv, plain.env()) },
			func() (time.Duration, error) { return localAgent(addr, c.argv, plain.env()) })
		if err != nil {
			return fmt.Errorf("%s agent: %w", c.name, err)
		}
		figure{title: fmt.Sprintf("whole process, a %s agent making %d streamed calls", c.name, spec.Steps),
			what: "replay from the tape", peer: "no-tape local server serving the same bytes",
			ratio: "replay / local server", target: c.target}.print(runs, rm, lm)
	}
	return runShort(dir, exe, runs)
}

// runShort measures the short Go agent replayed by the jukebox binary
// against the same agent replaying its go-vcr cassette in process.
func runShort(dir, exe string, runs int) error {
	bin, err := benchutil.BuildJukebox(filepath.Join(dir, "bin"))
	if err != nil {
		return err
	}
	short := agentRun{steps: shortSteps}
	tape, cas := filepath.Join(dir, "short.jbx"), filepath.Join(dir, "short")
	if err := writeAgentTape(tape, []string{exe}, short); err != nil {
		return err
	}
	if err := recordCassette(cas, tapegen.Interactions(spec)[:shortSteps]); err != nil {
		return err
	}
	jm, vm, err := interleaved(runs, func() (time.Duration, error) {
		cmd := exec.Command(bin, "replay", tape, "--", exe)
		cmd.Env = append(withoutProxy(os.Environ()), short.env())
		return timed(cmd, "jukebox replay")
	}, func() (time.Duration, error) {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), short.env(), cassetteEnv+"="+cas)
		return timed(cmd, "agent replaying its go-vcr cassette")
	})
	if err != nil {
		return err
	}
	figure{title: fmt.Sprintf("whole process, a Go agent making %d streamed calls", shortSteps),
		what: "jukebox replay (the binary)", peer: "the agent replaying its go-vcr v4 cassette itself",
		ratio: "jukebox / go-vcr", target: targetVCR}.print(runs, jm, vm)
	return nil
}
