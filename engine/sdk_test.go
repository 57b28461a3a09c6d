package engine_test

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestRecordReplayOfficialSDKs records the official openai and
// @anthropic-ai/sdk clients (streaming, non-streaming, a tool loop) through
// jukebox, then replays them with the model stopped and compares their
// output. It needs Node.js and the npm packages (testenv.RequireNode);
// JUKEBOX_SKIP_SDK=1 skips it.
func TestRecordReplayOfficialSDKs(t *testing.T) {
	t.Parallel()
	agents := testenv.RequireNode(t)
	for _, a := range []struct{ name, script, model string }{
		{"openai", "openai_agent.mjs", "demo-large"},
		{"anthropic", "anthropic_agent.mjs", "demo-small"},
	} {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			srv := startModel(t, llmsim.DefaultScript())
			env := append(cleanEnv(), "AGENT_MODEL="+a.model, "OPENAI_API_KEY="+secretKey, "ANTHROPIC_API_KEY="+secretKey)
			run := &agentRun{argv: []string{"node", filepath.Join(agents, a.script)}, dir: t.TempDir(), env: env}
			tape := filepath.Join(t.TempDir(), a.name+".jbx")
			rec := record(t, srv, run, tape)
			srv.Close()
			// No keys at all in replay: the placeholders must let the SDKs start.
			res, out := replay(t, run, tape, append(cleanEnv(), "AGENT_MODEL="+a.model))
			if res.Divergence != nil || res.End.ExitCode != 0 {
				t.Fatalf("replay: exit %d, divergence %v", res.End.ExitCode, res.Divergence)
			}
			if out != run.stdout.String() || res.Calls != rec.Calls {
				t.Fatalf("replay printed (%d calls)\n%s\nrecording printed (%d calls)\n%s", res.Calls, out, rec.Calls, run.stdout.String())
			}
		})
	}
}

// TestChunkEvents: a live call's answer reaches OnEvent piece by piece as
// it is relayed (EventChunk, the turntable's live fork view), and the
// pieces of each call make up the body the tape keeps for it.
func TestChunkEvents(t *testing.T) {
	t.Parallel()
	agents := testenv.RequireNode(t)
	srv := startModel(t, llmsim.DefaultScript())
	env := append(cleanEnv(), "AGENT_MODEL=demo-large", "OPENAI_API_KEY="+secretKey)
	tape := filepath.Join(t.TempDir(), "chunks.jbx")
	var mu sync.Mutex
	got := map[uint64][]byte{}
	pieces := map[uint64]int{}
	_, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: []string{"node", filepath.Join(agents, "openai_agent.mjs")}, Dir: t.TempDir(), Env: env,
			Stdout: io.Discard, Stderr: io.Discard, OnEvent: func(e engine.Event) {
				if e.Kind == engine.EventChunk {
					mu.Lock()
					got[e.Call] = append(got[e.Call], e.Data...)
					pieces[e.Call]++
					mu.Unlock()
				}
			}},
		Tape: tape, Upstreams: map[string]string{"openai": srv.OpenAIBaseURL()}})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	streamed := 0
	for f, err := range tp.Frames(tapefmt.KindLLMResponse) {
		if err != nil {
			t.Fatal(err)
		}
		p, _ := f.Decode()
		resp := p.(*tapefmt.LLMResponse)
		body, err := tp.Blob(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[resp.Call], body) {
			t.Errorf("call %d: the chunk events make %d bytes, the tape has %d", resp.Call, len(got[resp.Call]), len(body))
		}
		if len(resp.Chunks) > 1 {
			streamed++
			if pieces[resp.Call] < 2 {
				t.Errorf("streamed call %d came in %d chunk events", resp.Call, pieces[resp.Call])
			}
		}
	}
	if streamed == 0 {
		t.Fatal("no streamed call on the tape")
	}
}
