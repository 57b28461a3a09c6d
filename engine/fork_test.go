package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// call is one model call as a tape holds it.
type call struct {
	seq       uint64
	req, resp []byte // bodies
	model     string
}

func calls(t *testing.T, path string) ([]call, *tapefmt.RunStart) {
	t.Helper()
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	var out []call
	byID := map[uint64]int{} // a response can come after the next request
	for f, err := range tp.Frames(tapefmt.KindLLMRequest, tapefmt.KindLLMResponse) {
		if err != nil {
			t.Fatal(err)
		}
		p, _ := f.Decode()
		switch p := p.(type) {
		case *tapefmt.LLMRequest:
			b, _ := tp.Blob(p.Body)
			byID[p.Call] = len(out)
			out = append(out, call{seq: f.Seq, req: b, model: p.Model})
		case *tapefmt.LLMResponse:
			b, _ := tp.Blob(p.Body)
			out[byID[p.Call]].resp = b
		}
	}
	rs, err := engine.FirstRunStart(tp)
	if err != nil {
		t.Fatal(err)
	}
	return out, rs
}

func fork(t *testing.T, run *agentRun, parent string, frame uint64, over engine.Overrides, upstream string, env []string) (*engine.Result, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "fork.jbx")
	var stdout bytes.Buffer
	res, err := engine.Fork(context.Background(), engine.ForkOptions{
		RunOptions: engine.RunOptions{Argv: run.argv, Dir: run.dir, Env: env, Stdout: &stdout, Stderr: &stdout},
		Parent:     parent, Frame: frame, Overrides: over, Tape: out,
		Upstreams: map[string]string{"openai": upstream}})
	if err != nil {
		t.Fatalf("fork: %v", err)
	}
	checkTape(t, out)
	return res, out
}

// recordedParent records the demo agent (model demo-large) against the
// scripted model, for a fork: the model, the agent, the tape and its calls.
func recordedParent(t *testing.T) (*llmsim.Server, *agentRun, string, []call) {
	t.Helper()
	srv := startModel(t, nil)
	run := pythonAgent(t, "demo-large")
	parent := filepath.Join(t.TempDir(), "parent.jbx")
	record(t, srv, run, parent)
	pcalls, _ := calls(t, parent)
	return srv, run, parent, pcalls
}

// TestForkChangesTheAnswerFromTheForkFrameOn forks the demo run at its third
// model call with another model: the calls before it are the parent's, byte
// for byte; the call at the fork frame asks the new model, and the answers
// from there on differ. A fork of the fork keeps the lineage.
func TestForkChangesTheAnswerFromTheForkFrameOn(t *testing.T) {
	t.Parallel()
	srv, run, parent, pcalls := recordedParent(t)
	at := pcalls[2].seq
	env := append(cleanEnv(), "AGENT_MODEL=demo-large", "OPENAI_API_KEY="+secretKey)

	res, child := fork(t, run, parent, at, engine.Overrides{Model: "demo-small"}, srv.OpenAIBaseURL(), env)
	if res.Divergence != nil || res.End.ExitCode != 0 {
		t.Fatalf("fork: exit %d, divergence %v", res.End.ExitCode, res.Divergence)
	}
	fcalls, start := calls(t, child)
	if start.Parent == nil || start.Parent.Frame != at || start.Mode != "fork" {
		t.Fatalf("fork run.start parent = %+v", start.Parent)
	}
	for i := range 2 {
		if !bytes.Equal(fcalls[i].req, pcalls[i].req) || !bytes.Equal(fcalls[i].resp, pcalls[i].resp) {
			t.Fatalf("call %d before the fork frame differs from the parent's", i)
		}
	}
	if fcalls[2].model != "demo-small" || bytes.Equal(fcalls[2].resp, pcalls[2].resp) {
		t.Fatalf("the call at the fork frame asked %q and got the parent's answer: %v", fcalls[2].model, bytes.Equal(fcalls[2].resp, pcalls[2].resp))
	}

	// The fork replays offline (its overrides applied again at its fork
	// call), and so does its packed, self-contained form.
	packed := filepath.Join(t.TempDir(), "packed.jbx")
	if _, err := engine.Pack(child, "", packed, nil); err != nil {
		t.Fatal(err)
	}
	checkTape(t, packed)
	pc, pstart := calls(t, packed)
	if !pstart.Parent.Packed || len(pc) != len(fcalls) || !bytes.Equal(pc[0].resp, pcalls[0].resp) || !bytes.Equal(pc[2].resp, fcalls[2].resp) {
		t.Fatalf("packed tape: %d calls (fork has %d), parent %+v", len(pc), len(fcalls), pstart.Parent)
	}
	for _, tape := range []string{child, packed} {
		if rres, _ := replay(t, run, tape, env); rres.Divergence != nil || rres.End.ExitCode != 0 {
			t.Fatalf("replay of %s: exit %d, divergence %v", filepath.Base(tape), rres.End.ExitCode, rres.Divergence)
		}
	}

	// A fork of the fork names the fork as its parent.
	gres, grandchild := fork(t, run, child, fcalls[3].seq, engine.Overrides{Patch: []byte(`{"temperature": 0}`)}, srv.OpenAIBaseURL(), env)
	if gres.Divergence != nil || gres.End.ExitCode != 0 {
		t.Fatalf("fork of the fork: exit %d, divergence %v", gres.End.ExitCode, gres.Divergence)
	}
	_, gstart := calls(t, grandchild)
	ct, _ := tapefmt.Open(child)
	defer ct.Close()
	if gstart.Parent == nil || gstart.Parent.Tape != ct.Head().String() || gstart.Parent.Path != child {
		t.Fatalf("grandchild parent = %+v, want the fork %s", gstart.Parent, ct.Head())
	}
}

// TestForkStopsOnEarlyDivergence: an agent that asks something else before
// the fork frame is stopped and reported, as replay does.
func TestForkStopsOnEarlyDivergence(t *testing.T) {
	t.Parallel()
	srv, run, parent, pcalls := recordedParent(t)
	env := append(cleanEnv(), "AGENT_MODEL=demo-small", "OPENAI_API_KEY="+secretKey)
	res, _ := fork(t, run, parent, pcalls[3].seq, engine.Overrides{}, srv.OpenAIBaseURL(), env)
	if res.Divergence == nil || res.Divergence.Frame != int64(pcalls[0].seq) {
		t.Fatalf("divergence = %+v, want one at frame %d", res.Divergence, pcalls[0].seq)
	}
}

// TestForkEndedBeforeTheForkFrame: an agent that ended on the parent's
// answers, before the call at the fork frame, was a fork "exit 0" whose
// tape named a model it never asked (CLI and turntable alike).
func TestForkEndedBeforeTheForkFrame(t *testing.T) {
	t.Parallel()
	srv, run, parent, pcalls := recordedParent(t)
	env := append(cleanEnv(), "AGENT_MODEL=demo-large", "OPENAI_API_KEY="+secretKey)
	short := &agentRun{argv: []string{"sh", "-c", "exit 0"}, dir: run.dir}
	res, _ := fork(t, short, parent, pcalls[2].seq, engine.Overrides{Model: "demo-small"}, srv.OpenAIBaseURL(), env)
	d := res.Divergence
	if d == nil || d.Frame != int64(pcalls[2].seq) || d.Ended != "exit 0" ||
		!strings.Contains(d.Error(), "the agent ended (exit 0) before it asked for the call at the fork frame (POST /v1/chat/completions): nothing was forked") {
		t.Fatalf("divergence = %+v (%v)", d, d)
	}
}

// TestForkStoppedBeforeTheForkFrame: Ctrl-C on a fork whose agent had not
// reached the fork frame yet is the user's stop (130 in the CLI), not the
// divergence of an agent that ended before it.
func TestForkStoppedBeforeTheForkFrame(t *testing.T) {
	t.Parallel()
	srv, run, parent, pcalls := recordedParent(t)
	sigs := make(chan os.Signal, 1)
	go func() { time.Sleep(300 * time.Millisecond); sigs <- os.Interrupt }()
	res, err := engine.Fork(context.Background(), engine.ForkOptions{
		RunOptions: engine.RunOptions{Argv: []string{"sh", "-c", "sleep 30"}, Dir: run.dir, Env: cleanEnv(), Stdout: io.Discard, Stderr: io.Discard, Signals: sigs},
		Parent:     parent, Frame: pcalls[2].seq, Overrides: engine.Overrides{Model: "demo-small"}, Tape: filepath.Join(t.TempDir(), "fork.jbx"),
		Upstreams: map[string]string{"openai": srv.OpenAIBaseURL()}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Divergence != nil || res.End.Reason != tapefmt.ReasonInterrupted {
		t.Errorf("a fork stopped by the user: end %+v, divergence %v", res.End, res.Divergence)
	}
}

func TestOverridesApply(t *testing.T) {
	prompt := "be terse"
	temp := 0.2
	o := engine.Overrides{Model: "m2", SystemPrompt: &prompt, Temperature: &temp, Patch: []byte(`{"max_tokens": 50, "user": null}`)}
	got, err := o.Apply("openai", "/v1/chat/completions", []byte(`{"model":"m1","user":"u","messages":[{"role":"user","content":"hi"}]}`), true)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"max_tokens":50,"messages":[{"content":"be terse","role":"system"},{"content":"hi","role":"user"}],"model":"m2","temperature":0.2}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	got, _ = o.Apply("anthropic", "/v1/messages", []byte(`{"model":"m1","system":"old","messages":[]}`), true)
	if !bytes.Contains(got, []byte(`"system":"be terse"`)) {
		t.Fatalf("anthropic system prompt not set: %s", got)
	}
}

// TestForkScope: a fork's overrides reach every later call to the fork
// call's endpoint by default ("what if the rest of this run used model
// M"); it changed the fork call alone before. --once keeps that. The
// scope is on the fork's tape, and each fork replays offline. A field
// set by path rewrites the fork call; one the request lacks is an
// OverrideError before the agent starts.
func TestForkScope(t *testing.T) {
	t.Parallel()
	forkScopes(t, pythonAgent(t, "demo-large"), `"content":"You are terse."`)
}

// TestForkScopeOfficialSDK: the same with the official openai SDK's
// agent (Node.js), whose later calls stream as well.
func TestForkScopeOfficialSDK(t *testing.T) {
	t.Parallel()
	agents := testenv.RequireNode(t)
	run := &agentRun{argv: []string{"node", filepath.Join(agents, "openai_agent.mjs")}, dir: t.TempDir(),
		env: append(cleanEnv(), "AGENT_MODEL=demo-large", "OPENAI_API_KEY="+secretKey)}
	forkScopes(t, run, `"content":"You are terse."`)
}

// forkScopes records run and forks it at its third model call with each
// scope, a new model and its first message rewritten (wantSet is what the
// fork call's body then holds).
func forkScopes(t *testing.T, run *agentRun, wantSet string) {
	srv := startModel(t, nil)
	parent := filepath.Join(t.TempDir(), "parent.jbx")
	record(t, srv, run, parent)
	pcalls, _ := calls(t, parent)
	var chat []call // the chat completions calls: the endpoint the fork is at
	for _, c := range pcalls {
		if bytes.Contains(c.req, []byte(`"messages"`)) {
			chat = append(chat, c)
		}
	}
	if len(chat) < 4 {
		t.Fatalf("the run made %d chat calls; the test needs 4", len(chat))
	}
	at := chat[1].seq
	env := run.env
	for _, scope := range []engine.Scope{"", engine.ScopeOnce} {
		name := string(scope)
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			over := engine.Overrides{Model: "demo-small", Scope: scope,
				Set: []engine.FieldSet{{Path: "messages.0.content", Value: json.RawMessage(`"You are terse."`)}}}
			res, child := fork(t, run, parent, at, over, srv.OpenAIBaseURL(), env)
			if res.Divergence != nil || res.End.ExitCode != 0 {
				t.Fatalf("fork: exit %d, divergence %v", res.End.ExitCode, res.Divergence)
			}
			fcalls, start := calls(t, child)
			var rec engine.Overrides
			if err := json.Unmarshal(start.Parent.Overrides, &rec); err != nil {
				t.Fatal(err)
			}
			want := engine.ScopeAll
			if scope == engine.ScopeOnce {
				want = engine.ScopeOnce
			}
			if rec.Scope != want {
				t.Errorf("the fork's tape records scope %q, want %q", rec.Scope, want)
			}
			var fchat []call
			for _, c := range fcalls {
				if bytes.Contains(c.req, []byte(`"messages"`)) {
					fchat = append(fchat, c)
				}
			}
			if fchat[1].model != "demo-small" || !bytes.Contains(fchat[1].req, []byte(wantSet)) {
				t.Errorf("the fork call asked %q with %s", fchat[1].model, fchat[1].req)
			}
			for i, c := range fchat[2:] {
				wantModel := "demo-small"
				if want == engine.ScopeOnce {
					wantModel = "demo-large"
				}
				if c.model != wantModel {
					t.Errorf("chat call %d after the fork call asked %q, want %q", i+1, c.model, wantModel)
				}
			}
			if rres, _ := replay(t, run, child, env); rres.Divergence != nil || rres.End.ExitCode != 0 {
				t.Fatalf("replay of the fork: exit %d, divergence %v", rres.End.ExitCode, rres.Divergence)
			}
		})
	}

	_, err := engine.Fork(context.Background(), engine.ForkOptions{
		RunOptions: engine.RunOptions{Argv: []string{"sh", "-c", "echo the agent ran; exit 1"}, Dir: run.dir, Env: env, Stdout: io.Discard, Stderr: io.Discard},
		Parent:     parent, Frame: at, Tape: filepath.Join(t.TempDir(), "bad.jbx"),
		Overrides: engine.Overrides{Set: []engine.FieldSet{{Path: "messages.9.content", Value: json.RawMessage(`"x"`)}}}})
	var oe *engine.OverrideError
	if !errors.As(err, &oe) || oe.Frame != at || !strings.Contains(err.Error(), "messages.9.content") {
		t.Errorf("a field the request lacks: %v, want an OverrideError at frame %d", err, at)
	}
}
