package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/demo"
	"github.com/jukebox-os/jukebox/internal/llmsim"
)

// DemoCmd records the bundled agent against the scripted model, offline.
type DemoCmd struct {
	Model  string `default:"demo-large" help:"Model the agent asks for; the scripted model answers demo-large and demo-small differently."`
	Dir    string `default:"tapes" type:"path" help:"Folder for the tape and the agent's workspace."`
	JSON   bool   `help:"Print the result as JSON."`
	NoPlay bool   `help:"Do not open the turntable afterwards (it opens only on a terminal anyway)."`
}

// Run starts the scripted model, records the demo agent and says what to try next.
func (c *DemoCmd) Run(ctx context.Context, env *Env) error {
	python, err := exec.LookPath("python3")
	if err != nil {
		return fmt.Errorf("the demo agent is a Python script and python3 is not on PATH: %w", err)
	}
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	if err != nil {
		return fmt.Errorf("start the scripted model: %w", err)
	}
	defer srv.Close()
	stamp := time.Now().Format("20060102-150405")
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return err
	}
	ws, err := mkdirUnique(filepath.Join(c.Dir, "demo-workspace-"+stamp))
	if err != nil {
		return err
	}
	agent, err := demo.WriteAgent(ws)
	if err != nil {
		return err
	}
	tape := filepath.Join(c.Dir, fmt.Sprintf("demo-%s-%s.jbx", c.Model, stamp))
	o := runOptions(env, []string{python, agent}, "demo", 0, c.JSON)
	o.Dir, o.Env = ws, append(os.Environ(), "AGENT_MODEL="+c.Model, "OPENAI_API_KEY=sk-demo-not-a-real-key")
	o.AutoName = true
	o.OnTape = func(p string) {
		fmt.Fprintf(env.Stderr, "jukebox demo: scripted model on %s; recording %s\n\n", srv.URL(), p)
	}
	res, err := engine.Record(agentContext(ctx), engine.RecordOptions{RunOptions: o, Tape: tape,
		Upstreams: map[string]string{"openai": srv.OpenAIBaseURL()}})
	if err := runFailed(err, res); err != nil {
		return err
	}
	tape = res.Tape
	if c.JSON || res.Unreadable != "" {
		return finishRun(env, res, c.JSON, "")
	}
	if out, ok := env.Stdout.(*os.File); ok && !c.NoPlay && term.IsTerminal(out.Fd()) {
		// Forks made on the turntable go to the scripted model, still running.
		play := PlayCmd{Tapes: []string{tape}, Theme: "diner", Upstream: upstreams{"openai": srv.OpenAIBaseURL()}}
		return play.Run(ctx, env)
	}
	fmt.Fprintf(env.Stderr, "\njukebox demo: the agent's workspace: %s\nnext:\n", ws)
	for _, line := range []string{"jukebox play " + tape, "jukebox replay " + tape + "     # offline, no model needed",
		"jukebox show " + tape, "jukebox ls " + c.Dir} {
		fmt.Fprintf(env.Stderr, "  %s\n", line)
	}
	return finishRun(env, res, false, fmt.Sprintf("recorded %d model calls, %d frames to %s", res.Calls, res.Frames, tape))
}

// mkdirUnique makes the folder dir, or dir-2, dir-3, ... when it exists
// (another demo started the same second), and returns its absolute path.
func mkdirUnique(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	try := abs
	for n := 2; ; n++ {
		err := os.Mkdir(try, 0o755)
		if err == nil {
			return try, nil
		}
		if !errors.Is(err, fs.ErrExist) || n > 1000 {
			return "", err
		}
		try = fmt.Sprintf("%s-%d", abs, n)
	}
}
