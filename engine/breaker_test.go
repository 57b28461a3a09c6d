package engine_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/breaker"
	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// loopScript is a model that always asks for the same tool call.
const loopScript = `{"version": 1, "rules": [{"name": "loop",
  "reply": {"tool_calls": [{"name": "run_shell", "arguments": {"command": "echo still waiting"}}]}}]}`

// TestBreakerStopsAToolLoop: an agent on the official openai SDK, stuck
// calling the same tool for the same result, is stopped under MaxRepeat 3
// with an error its SDK
// surfaces (no retry): the third time it sends that result back, that
// call is refused. The tape holds a breaker.trip frame with the repeated
// frames as evidence, and the result says why.
func TestBreakerStopsAToolLoop(t *testing.T) {
	t.Parallel()
	agents := testenv.RequireNode(t)
	for _, stream := range []bool{false, true} {
		name := "plain"
		if stream {
			name = "streamed"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			script, err := llmsim.ParseScript([]byte(loopScript))
			if err != nil {
				t.Fatal(err)
			}
			srv := startModel(t, script)
			env := append(cleanEnv(), "OPENAI_API_KEY="+secretKey)
			if stream {
				env = append(env, "AGENT_STREAM=1")
			}
			tape := filepath.Join(t.TempDir(), "loop.jbx")
			var out, errs bytes.Buffer
			res, err := engine.Record(context.Background(), engine.RecordOptions{
				RunOptions: engine.RunOptions{Argv: []string{"node", filepath.Join(agents, "loop_agent.mjs")}, Dir: t.TempDir(), Env: env,
					Stdout: &out, Stderr: &errs, Limits: breaker.Limits{MaxRepeat: 3}},
				Tape: tape, Upstreams: map[string]string{"openai": srv.OpenAIBaseURL()}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Breaker == nil || res.Breaker.Rule != breaker.RuleRepeat {
				t.Fatalf("breaker %+v; agent exit %d\n%s%s", res.Breaker, res.End.ExitCode, out.String(), errs.String())
			}
			if strings.Count(out.String(), "-> still waiting") != 3 || !strings.Contains(errs.String(), "circuit breaker tripped") {
				t.Errorf("the agent ran %d rounds and said:\n%s", strings.Count(out.String(), "-> still waiting"), errs.String())
			}
			if res.Calls != 4 {
				t.Errorf("%d model calls, want 4 (the fourth refused; the SDK must not retry it)", res.Calls)
			}
			tapetest.Verify(t, tape)
			tp, err := tapefmt.Open(tape)
			if err != nil {
				t.Fatal(err)
			}
			defer tp.Close()
			var trip *tapefmt.BreakerTrip
			for f, err := range tp.Frames(tapefmt.KindBreakerTrip) {
				if err != nil {
					t.Fatal(err)
				}
				p, _ := f.Decode()
				trip = p.(*tapefmt.BreakerTrip)
			}
			if trip == nil || len(trip.Evidence) != 6 {
				t.Fatalf("breaker.trip frame: %+v", trip)
			}
			for _, seq := range trip.Evidence {
				f, err := tp.Frame(int(seq))
				if err != nil || (f.Kind != tapefmt.KindLLMRequest && f.Kind != tapefmt.KindLLMResponse) {
					t.Errorf("evidence frame %d is %v (%v)", seq, f.Kind, err)
				}
			}
		})
	}
}

// TestBreakerCostCap: a cost cap stops a real run (the demo agent, which
// makes six calls) part-way, with the cost on the trip; the call the
// breaker refused is on the tape with its error.
func TestBreakerCostCap(t *testing.T) {
	t.Parallel()
	run := pythonAgent(t, "demo-large")
	srv := startModel(t, nil)
	tape := filepath.Join(t.TempDir(), "cap.jbx")
	var out, errs bytes.Buffer
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: run.argv, Dir: run.dir, Env: run.env, Stdout: &out, Stderr: &errs,
			Limits: breaker.Limits{MaxCost: 0.001}},
		Tape: tape, Upstreams: map[string]string{"openai": srv.OpenAIBaseURL()}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Breaker == nil || res.Breaker.Rule != breaker.RuleCost || res.Calls >= 6 {
		t.Fatalf("breaker %+v after %d calls\n%s%s", res.Breaker, res.Calls, out.String(), errs.String())
	}
	tapetest.Verify(t, tape)
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	refused := 0
	for f, err := range tp.Frames(tapefmt.KindLLMResponse) {
		if err != nil {
			t.Fatal(err)
		}
		p, _ := f.Decode()
		if r := p.(*tapefmt.LLMResponse); r.Status == 400 && strings.Contains(r.Error, "circuit breaker tripped (cost)") {
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("%d refused calls on the tape, want 1", refused)
	}
}

// TestForkResumesATrippedRun: the documented way on after a trip is a
// fork before it with a raised cap: the calls before the fork frame come
// from the tape and cost nothing, and the run goes on to its end.
func TestForkResumesATrippedRun(t *testing.T) {
	t.Parallel()
	run := pythonAgent(t, "demo-large")
	srv := startModel(t, nil)
	tape := filepath.Join(t.TempDir(), "tripped.jbx")
	var out bytes.Buffer
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: run.argv, Dir: run.dir, Env: run.env, Stdout: &out, Stderr: &out,
			Limits: breaker.Limits{MaxCost: 0.001}},
		Tape: tape, Upstreams: map[string]string{"openai": srv.OpenAIBaseURL()}})
	if err != nil || res.Breaker == nil {
		t.Fatalf("the capped run: %v, %+v", err, res)
	}
	pcalls, _ := calls(t, tape)
	at := pcalls[len(pcalls)-1].seq // the refused call
	fout := filepath.Join(t.TempDir(), "resumed.jbx")
	fres, err := engine.Fork(context.Background(), engine.ForkOptions{
		RunOptions: engine.RunOptions{Argv: run.argv, Dir: run.dir, Env: run.env, Stdout: &out, Stderr: &out,
			Limits: breaker.Limits{MaxCost: 1}},
		Parent: tape, Frame: at, Tape: fout, Upstreams: map[string]string{"openai": srv.OpenAIBaseURL()}})
	if err != nil || fres.Breaker != nil || fres.Divergence != nil || fres.End.ExitCode != 0 {
		t.Fatalf("the fork with a raised cap: %v, breaker %+v, divergence %v, exit %d\n%s", err, fres.Breaker, fres.Divergence, fres.End.ExitCode, out.String())
	}
	checkTape(t, fout)
}
