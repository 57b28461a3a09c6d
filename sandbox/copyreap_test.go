//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCopyEndsProcessTree: in the copy fallback, what the agent started
// ends with the run: a backgrounded sleep that would write a file later,
// and one that left the agent's session (setsid), are gone when Exec
// returns, so nothing writes after the run.
func TestCopyEndsProcessTree(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	mkTree(t, ws, map[string]string{"a.txt": "a"})
	out := t.TempDir()
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	copyExec(t, tx, `o=$OUTDIR
(sleep 60; echo late > "$o/late1") </dev/null >/dev/null 2>&1 & echo $! > "$o/pid1"
setsid sh -c 'sleep 60; echo late > "$0/late2"' "$o" </dev/null >/dev/null 2>&1 & echo $! > "$o/pid2"
exit 0`, "OUTDIR="+out)
	for _, name := range []string{"pid1", "pid2"} {
		b, err := os.ReadFile(filepath.Join(out, name))
		must(t, err)
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		must(t, err)
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("%s: the agent's background process %d outlived the run", name, pid)
		}
	}
	if got := fmt.Sprint(readTree(t, out)); strings.Contains(got, "late") {
		t.Errorf("written after the run: %s", got)
	}
}

// TestCopyCancelEndsProcessTree: a copy run cancelled while the agent
// runs (Ctrl-C, a signal to jukebox) ends the agent and what it started.
func TestCopyCancelEndsProcessTree(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	mkTree(t, ws, map[string]string{"a.txt": "a"})
	out := t.TempDir()
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Exec(cctx, tx, ExecOptions{Args: []string{"sh", "-c", `(sleep 60; echo late > "$0/late") </dev/null >/dev/null 2>&1 &
echo $! > "$0/pid.tmp"; mv "$0/pid.tmp" "$0/pid"; sleep 60`, out}, Mode: ModeCopy, Notice: &bytes.Buffer{}})
		done <- err
	}()
	var pid int
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(out, "pid")); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent never started")
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Exec did not return after the cancel")
	}
	if alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the agent's background process %d outlived the cancelled run", pid)
	}
}
