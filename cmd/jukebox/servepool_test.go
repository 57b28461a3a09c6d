package main

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/controlapi"
	"github.com/jukebox-os/jukebox/engine"
)

// poolRun asks the server on sock for a run named name: its ready line,
// and the connection, whose last line says how it ended.
func poolRun(t *testing.T, sock, name string) (engine.ServeInfo, *bufio.Reader, net.Conn) {
	t.Helper()
	conn, err := net.Dial("unix", sock)
	must(t, err)
	t.Cleanup(func() { conn.Close() })
	must(t, json.NewEncoder(conn).Encode(poolRequest{Name: name, Argv: []string{"agent", name}}))
	r := bufio.NewReader(conn)
	line, err := r.ReadBytes('\n')
	must(t, err)
	var info engine.ServeInfo
	must(t, json.Unmarshal(line, &info))
	if info.Tape == "" {
		t.Fatalf("no run: %s", line)
	}
	return info, r, conn
}

// TestServeSocketRunsOneAfterAnother: serve --socket is one process for
// run after run (the Python SDK's tracks no longer start one each), each
// on a tape of its own, ended through the control API; a second serve on
// the same socket leaves it to the first; a bad request is answered with
// exit 2, and so is one whose line does not end; it exits once --idle
// passes without a run.
func TestServeSocketRunsOneAfterAnother(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "serve.sock")
	start := func() (*bufio.Reader, func() error) {
		cmd := jukeboxCmd(t.Context(), dir, "serve", "--socket", sock, "--tape-dir", "tapes", "--idle", "2s")
		out, err := cmd.StdoutPipe()
		must(t, err)
		must(t, cmd.Start())
		return bufio.NewReader(out), cmd.Wait
	}
	out, wait := start()
	first, err := out.ReadString('\n')
	if err != nil || !strings.Contains(first, `"pid"`) {
		t.Fatalf("ready line %q: %v", first, err)
	}
	out2, wait2 := start()
	if line, _ := out2.ReadString('\n'); line != "" {
		t.Errorf("a second serve on the socket printed %q", line)
	}
	must(t, wait2())
	var tapes []string
	for _, name := range []string{"one", "two"} {
		info, r, _ := poolRun(t, sock, name)
		c := &controlapi.Client{Base: info.Env[controlapi.BaseEnv], Token: info.Env[controlapi.TokenEnv]}
		_, err := c.End(t.Context(), controlapi.End{ExitCode: 0})
		must(t, err)
		line, err := r.ReadBytes('\n')
		must(t, err)
		var end poolEnd
		if must(t, json.Unmarshal(line, &end)); end.Code != 0 {
			t.Fatalf("run %s ended %+v", name, end)
		}
		tapes = append(tapes, info.Tape)
	}
	if tapes[0] == tapes[1] || !strings.Contains(filepath.Base(tapes[1]), "two") {
		t.Fatalf("tapes %v", tapes)
	}
	for _, tape := range tapes {
		if _, err := os.Stat(tape); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := net.Dial("unix", sock)
	must(t, err)
	conn.Write([]byte("not json\n"))
	var end poolEnd
	must(t, json.NewDecoder(conn).Decode(&end))
	conn.Close()
	if end.Code != ExitUsage || !strings.Contains(end.Error, "JSON line") {
		t.Errorf("a bad request: %+v", end)
	}
	// A request line that does not end (a process of the user's) ran
	// serve out of memory: it is refused past its bound.
	conn, err = net.Dial("unix", sock)
	must(t, err)
	go func() {
		chunk := []byte(strings.Repeat("x", 1<<16))
		for range 1 << 12 { // 256 MiB at most, a bound of the test's own
			if _, err := conn.Write(chunk); err != nil {
				return
			}
		}
	}()
	end = poolEnd{}
	conn.SetReadDeadline(time.Now().Add(time.Minute)) // a hang guard: serve read on before
	must(t, json.NewDecoder(conn).Decode(&end))
	conn.Close()
	if end.Code != ExitUsage || !strings.Contains(end.Error, "KiB") {
		t.Errorf("a request line without end: %+v", end)
	}
	done := make(chan error, 1)
	go func() { done <- wait() }()
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(time.Minute):
		t.Fatal("serve --socket --idle 2s still runs a minute after its last run")
	}
}
