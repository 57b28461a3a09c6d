package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// nestedScript runs jukebox ($JB) inside the outer booth, where user
// namespaces are refused (as under Docker's default seccomp profile or
// Ubuntu's AppArmor restriction): first as `record --booth` (auto), then
// with --booth-mode copy, then fork of a tape recorded without the booth.
const nestedScript = `export XDG_STATE_HOME="$PWD/state"
cd inner
"$JB" record -o auto.jbx --booth --commit never -- sh -c 'echo AGENT-RAN-AUTO' 2>&1
echo "auto-exit=$?"
"$JB" record -o copy.jbx --booth --booth-mode copy --commit never --json -- sh -c 'echo AGENT-RAN-COPY' 2>&1
echo "copy-exit=$?"
"$JB" show copy.jbx 2>&1
"$JB" fork --dir . --frame 0 ../plain.jbx 2>&1
echo "fork-exit=$?"
`

// TestAutoFailsClosedNested: where the booth cannot confine, record
// --booth (auto) refuses to start the agent, exit 2, naming the reason
// and --booth-mode copy; copy mode says NOT confined before the agent
// starts and records confined: false in --json and in tx.begin; fork
// refuses as record does. (auto ran the agent unconfined and said so once
// it had finished.) The outer run, confined, says confined: true.
func TestAutoFailsClosedNested(t *testing.T) {
	requireConfinedBooth(t)
	ws := t.TempDir()
	bin := filepath.Join(ws, "jukebox.test") // its build folder is in the host's /tmp
	testenv.SelfAt(t, bin)
	must(t, os.Mkdir(filepath.Join(ws, "state"), 0o700))
	must(t, os.Mkdir(filepath.Join(ws, "inner"), 0o755))
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	must(t, err)
	defer srv.Close()
	plain := filepath.Join(ws, "plain.jbx") // a run with a model call, recorded without the booth
	if out, err := jukeboxCmd(t.Context(), ws, "record", "-o", plain, "--upstream", "openai="+srv.OpenAIBaseURL(), "--", "sh", "-c", curlAgent).CombinedOutput(); err != nil {
		t.Fatalf("record: %v\n%s", err, out)
	}
	tape := filepath.Join(t.TempDir(), "outer.jbx")
	cmd := jukeboxCmd(t.Context(), ws, "record", "-o", tape, "--booth", "--commit", "never", "--json", "--", "sh", "-c", nestedScript)
	cmd.Env = append(cmd.Env, "JB="+bin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	seen := stderr.String()
	var res engine.Result
	if err != nil || json.Unmarshal(out, &res) != nil || res.Booth == nil || !res.Booth.Confined {
		t.Fatalf("outer run: %v; result %s\n%s", err, out, seen)
	}
	if begin := txBegin(t, tape); begin.Confined == nil || !*begin.Confined {
		t.Errorf("the outer run's tx.begin: %+v, want confined: true", begin)
	}
	auto, rest, _ := strings.Cut(seen, "auto-exit=")
	if !strings.HasPrefix(rest, "2\n") || strings.Contains(auto, "AGENT-RAN-AUTO") ||
		!strings.Contains(auto, "cannot confine") || !strings.Contains(auto, "--booth-mode copy") {
		t.Errorf("record --booth where the booth cannot confine: want exit 2, the reason and --booth-mode copy, no agent:\n%s", seen)
	}
	cp, rest, _ := strings.Cut(rest, "copy-exit=")
	notice := strings.Index(cp, "NOT confined")
	if !strings.HasPrefix(rest, "0\n") || notice < 0 || notice > strings.Index(cp, "AGENT-RAN-COPY") ||
		!strings.Contains(cp, `"confined": false`) || !strings.Contains(rest, "copy, NOT confined") {
		t.Errorf("--booth-mode copy: want the agent run after a NOT confined notice, confined: false in --json and tx.begin:\n%s", seen)
	}
	fork, rest, _ := strings.Cut(rest, "fork-exit=")
	if _, fork, _ = strings.Cut(fork, "copy, NOT confined"); !strings.HasPrefix(rest, "2\n") || !strings.Contains(fork, "--booth-mode copy") {
		t.Errorf("fork where the booth cannot confine: want exit 2 naming --booth-mode copy:\n%s", seen)
	}
}

// curlAgent makes one model call through jukebox.
const curlAgent = `curl -sf "$OPENAI_BASE_URL/chat/completions" -H 'content-type: application/json' ` +
	`-d '{"model":"demo-small","messages":[{"role":"user","content":"hi"}]}'`

// txBegin is the first tx.begin of the tape at path.
func txBegin(t *testing.T, path string) tapefmt.TxBegin {
	t.Helper()
	tp := openTape(t, path)
	defer tp.Close()
	for f, err := range tp.Frames(tapefmt.KindTxBegin) {
		must(t, err)
		p, err := f.Decode()
		must(t, err)
		return *p.(*tapefmt.TxBegin)
	}
	t.Fatalf("%s holds no tx.begin", path)
	return tapefmt.TxBegin{}
}

// TestBoothModeFlagsOfForkAndPlay: fork and play take --booth-mode, which
// means nothing with --no-booth.
func TestBoothModeFlagsOfForkAndPlay(t *testing.T) {
	tape := filepath.Join("..", "..", "testdata", "tapes", "agent-run.jbx")
	for _, args := range [][]string{
		{"fork", "--no-booth", "--booth-mode", "copy", "--frame", "1", tape},
		{"play", "--no-booth", "--booth-mode", "copy", tape},
	} {
		if _, errs := wantCode(t, ExitUsage, args...); !strings.Contains(errs, "--booth-mode applies to the booth") {
			t.Errorf("%s: %s", args[0], errs)
		}
	}
}
