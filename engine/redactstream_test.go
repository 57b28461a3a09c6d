package engine_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/export"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestRedactStreamedSplit: the model streams a secret split across
// tokens (three runes a chunk: SEC|RET|-PR|OMP|T-a|bc), which no single
// event holds. It is masked in the joined answer: not in the tape's bytes,
// its decoded blobs, the agent's output frames, nor any export (JSON, HAR,
// OTLP with content, where the answer is joined). A replay whose secret
// has another length (a rotated key) still matches, with the masked
// output the recording kept.
func TestRedactStreamedSplit(t *testing.T) {
	t.Parallel()
	agents := testenv.RequireNode(t)
	script, err := llmsim.ParseScript([]byte(`{"version": 1, "defaults": {"chunk_size": 3},
		"rules": [{"name": "echo", "reply": {"text": "noted: {{user}}"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := startModel(t, script)
	const secret = "SECRET-PROMPT-abc"
	argv := []string{"node", filepath.Join(agents, "secret_agent.mjs")}
	env := append(cleanEnv(), "OPENAI_API_KEY="+secretKey, "PROMPT=the code is "+secret, "PLANT=none")
	dir, tape := t.TempDir(), filepath.Join(t.TempDir(), "split.jbx")
	var out, errs bytes.Buffer
	redact := []string{`SECRET-PROMPT-\w+`}
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: argv, Dir: dir, Env: env, Stdout: &out, Stderr: &errs, Redact: redact},
		Tape:       tape, Upstreams: map[string]string{"openai": srv.OpenAIBaseURL()}})
	if err != nil || res.End.ExitCode != 0 {
		t.Fatalf("record: %v\n%s%s", err, out.String(), errs.String())
	}
	if !bytes.Contains(out.Bytes(), []byte("answer: noted: the code is "+secret)) {
		t.Fatalf("the agent did not get the secret streamed:\n%s", out.String())
	}
	tapetest.Verify(t, tape)
	tapetest.NoSecrets(t, tape, secret)
	raw, _ := os.ReadFile(tape)
	exports := map[string][]byte{"tape": raw, "otlp": otlpBytes(t, tape)}
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	var js, har bytes.Buffer
	if err := export.JSON(&js, tp, tape); err != nil {
		t.Fatal(err)
	}
	if err := export.HAR(&har, tp, tape, "test"); err != nil {
		t.Fatal(err)
	}
	exports["json"], exports["har"] = js.Bytes(), har.Bytes()
	for name, b := range exports {
		if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte("PROMPT-abc")) {
			t.Errorf("the secret is in the %s export", name)
		}
	}
	if !bytes.Contains(exports["otlp"], []byte("the code is [redacted]")) {
		t.Errorf("the OTLP export does not hold the masked answer")
	}

	// Replay with a rotated secret of another length.
	env2 := append(cleanEnv(), "OPENAI_API_KEY="+secretKey, "PROMPT=the code is SECRET-PROMPT-abcdefghijklmn", "PLANT=none")
	var rout bytes.Buffer
	rres, err := engine.Replay(context.Background(), engine.ReplayOptions{
		RunOptions: engine.RunOptions{Argv: argv, Dir: dir, Env: env2, Stdout: &rout, Stderr: &errs}, From: tape})
	if err != nil || rres.Divergence != nil || rres.End.ExitCode != 0 {
		t.Fatalf("replay with a secret of another length: %v, divergence %v\n%s", err, rres.Divergence, errs.String())
	}
	if !bytes.Contains(rout.Bytes(), []byte("answer: noted: the code is [redacted]")) || rres.OutputSame == nil || !*rres.OutputSame {
		t.Errorf("replay did not serve the masked answer as recorded:\n%s", rout.String())
	}
}

// otlpBytes exports path over OTLP/HTTP with content to a receiver that
// keeps every request body, decoded.
func otlpBytes(t *testing.T, path string) []byte {
	t.Helper()
	var mu sync.Mutex
	var got bytes.Buffer
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				t.Error(err)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		mu.Lock()
		got.Write(b)
		mu.Unlock()
	}))
	defer rcv.Close()
	_, err := export.OTLP(context.Background(), []string{path}, export.Endpoint{URL: rcv.URL, Protocol: export.ProtocolHTTP},
		export.Options{IncludeContent: true}, nil)
	if err != nil {
		t.Fatalf("otlp export: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got.Len() == 0 {
		t.Fatal("the OTLP receiver got nothing")
	}
	return bytes.Clone(got.Bytes())
}
