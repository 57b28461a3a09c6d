package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// serveStart starts jukebox serve in dir and reads its line.
func serveStart(t *testing.T, dir string, args ...string) (stdin interface{ Close() error }, wait func() error, info struct {
	Tape   string            `json:"tape"`
	TapeID string            `json:"tape_id"`
	Env    map[string]string `json:"env"`
}) {
	t.Helper()
	cmd := jukeboxCmd(t.Context(), dir, append([]string{"serve"}, args...)...)
	in, err := cmd.StdinPipe()
	must(t, err)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadBytes('\n')
	must(t, err)
	must(t, json.Unmarshal(line, &info))
	return in, cmd.Wait, info
}

func lastFrame(t *testing.T, path string) tapefmt.Payload {
	t.Helper()
	tp := openTape(t, path)
	defer tp.Close()
	var last tapefmt.Payload
	for f, err := range tp.Frames() {
		must(t, err)
		p, err := f.Decode()
		must(t, err)
		last = p
	}
	return last
}

// TestServe: jukebox serve prints where it serves, writes the run's turns
// and ends the run with the exit code the served process gives (or, when
// its standard input closes first, as interrupted with no exit code).
func TestServe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stdin, wait, info := serveStart(t, dir, "--name", "served", "--", "python3", "agent.py")
	if filepath.Dir(info.Tape) != filepath.Join(dir, "tapes") || !strings.HasPrefix(filepath.Base(info.Tape), "served-") || len(info.TapeID) != 32 {
		t.Errorf("info: %+v", info)
	}
	base, token := info.Env["JUKEBOX_CONTROL"], info.Env["JUKEBOX_CONTROL_TOKEN"]
	if token == "" || !strings.HasSuffix(info.Env["OPENAI_BASE_URL"], "/openai/v1") {
		t.Fatalf("env: %v", info.Env)
	}
	post := func(path, body string) int {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("/v1/turn", `{"agent":"a","turn":1,"text":"hello"}`); code != 200 {
		t.Fatalf("turn: %d", code)
	}
	if code := post("/v1/end", `{"exit_code":3,"error":"agent failed"}`); code != 200 {
		t.Fatalf("end: %d", code)
	}
	must(t, wait())
	stdin.Close()
	end, ok := lastFrame(t, info.Tape).(*tapefmt.RunEnd)
	if !ok || end.ExitCode != 3 || end.Error != "agent failed" {
		t.Errorf("run.end: %+v", end)
	}

	// No end: serve's standard input closes (its parent died).
	stdin, wait, info = serveStart(t, dir, "-o", filepath.Join(dir, "cut.jbx"))
	stdin.Close()
	must(t, wait())
	end, ok = lastFrame(t, info.Tape).(*tapefmt.RunEnd)
	if !ok || end.ExitCode != -1 || end.Reason != tapefmt.ReasonInterrupted || !strings.Contains(end.Error, "closed serve's standard input") {
		t.Errorf("run.end without an end: %+v", end)
	}
	if _, err := os.Stat(filepath.Join(dir, "cut.jbx")); err != nil {
		t.Error(err)
	}
}
