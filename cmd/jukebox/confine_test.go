//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/tapefmt"
)

func requireConfinedBooth(t *testing.T) {
	t.Helper()
	if caps := sandbox.Probe(t.Context(), t.TempDir()); !caps.Overlay {
		testenv.Unavailable(t, fmt.Sprintf("the confined booth (overlayfs in a user namespace), refused here (%v)", caps.Notes),
			"run on Linux with unprivileged user namespaces allowed")
	}
}

// alive reports whether a process whose command line holds marker runs.
func alive(marker string) bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		if b, err := os.ReadFile(d); err == nil && bytes.Contains(b, []byte(marker)) {
			return true
		}
	}
	return false
}

// TestKilledJukeboxTakesTheAgent: kill -9 of jukebox during a recording
// ends the agent, in the booth (its whole PID namespace) and outside it
// (the agent itself, through the parent-death signal).
func TestKilledJukeboxTakesTheAgent(t *testing.T) {
	t.Parallel()
	for _, booth := range []bool{false, true} {
		t.Run(fmt.Sprintf("booth=%v", booth), func(t *testing.T) {
			t.Parallel()
			if booth {
				requireConfinedBooth(t)
			}
			marker := fmt.Sprintf("%d", 700000+time.Now().UnixNano()%100000)
			args := []string{"record", "-o", filepath.Join(t.TempDir(), "k.jbx")}
			if booth {
				args = append(args, "--booth", "--commit", "never")
			}
			args = append(args, "--", "sh", "-c", "echo ready; exec sleep "+marker)
			cmd := jukeboxCmd(t.Context(), t.TempDir(), args...)
			out, err := cmd.StdoutPipe()
			must(t, err)
			must(t, cmd.Start())
			if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
				cmd.Process.Kill()
				t.Fatalf("the agent did not start: %q", line)
			}
			// "ready" comes before the shell execs sleep.
			for start := time.Now(); !alive("sleep\x00"+marker) && time.Since(start) < 10*time.Second; {
				time.Sleep(10 * time.Millisecond)
			}
			if !alive("sleep\x00" + marker) {
				t.Fatal("the agent is not running")
			}
			cmd.Process.Kill()
			cmd.Wait()
			deadline := time.Now().Add(20 * time.Second)
			for alive("sleep\x00"+marker) && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if alive("sleep\x00" + marker) {
				exec.Command("pkill", "-f", "sleep "+marker).Run()
				t.Fatal("the agent outlived jukebox")
			}
		})
	}
}

// TestBoothBackgroundChildDoesNotHang: a background child that holds
// stdout ends with the agent; record --booth does not wait for it.
func TestBoothBackgroundChildDoesNotHang(t *testing.T) {
	t.Parallel()
	requireConfinedBooth(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := jukeboxCmd(ctx, t.TempDir(), "record", "-o", filepath.Join(t.TempDir(), "b.jbx"),
		"--booth", "--commit", "never", "--", "sh", "-c", "sleep 86400 & echo started")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("record --booth waited for the background child:\n%s", out)
	}
	if err != nil || !strings.Contains(string(out), "started") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestConfinementFlags: flags that make no sense are refused before the
// agent starts (exit 2), naming the flag and the path.
func TestConfinementFlags(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	must(t, os.Mkdir(filepath.Join(ws, "inner"), 0o755))
	outside := t.TempDir()
	must(t, os.Symlink(outside, filepath.Join(ws, "link")))
	must(t, os.Mkdir(filepath.Join(outside, "sub"), 0o755))
	state := t.TempDir()
	keyDir := filepath.Join(state, "jukebox") // the journal key's folder
	must(t, os.Mkdir(keyDir, 0o700))
	cacheHome := t.TempDir() // jukebox/ in it: compiled tools jukebox runs
	storeParent := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--net", "none"}, "only apply with --booth"},
		{[]string{"--allow-write-live", outside}, "only apply with --booth"},
		{[]string{"--booth", "--net", "none", "--booth-mode", "copy"}, "--net none needs the overlay booth"},
		{[]string{"--hermetic"}, "only apply with --booth"},
		{[]string{"--booth", "--hermetic"}, "--hermetic needs --net none"},
		{[]string{"--booth", "--allow-write-live", filepath.Join(outside, "missing")}, "--allow-write-live " + filepath.Join(outside, "missing")},
		{[]string{"--booth", "--allow-write-live", "/"}, "--allow-write-live /: that would let the agent write anywhere"},
		{[]string{"--booth", "--allow-write-live", "inner"}, "inside the workspace"},
		{[]string{"--booth", "--allow-write-live", filepath.Dir(ws)}, "holds the workspace"},
		{[]string{"--booth", "--allow-write-live", "link"}, "a symlink"},
		// Places the booth gives the agent its own of, or hides: the
		// overlay refused them and the run fell back to the unconfined copy.
		{[]string{"--booth", "--allow-write-live", "/proc"}, "--allow-write-live /proc: the booth gives the agent its own /proc"},
		{[]string{"--booth", "--allow-write-live", "/sys/fs"}, "its own /sys"},
		{[]string{"--booth", "--allow-write-live", "/dev/shm"}, "its own /dev/shm"},
		{[]string{"--booth", "--allow-write-live", "/run"}, "its own /run"},
		{[]string{"--booth", "--allow-write-live", keyDir}, "the booth hides " + keyDir},
		// Folders holding jukebox's own: the agent renamed the hidden
		// folder away and planted code a later booth exec ran unconfined.
		{[]string{"--booth", "--allow-write-live", cacheHome}, "--allow-write-live " + cacheHome + ": holds " + filepath.Join(cacheHome, "jukebox") + ", jukebox's own"},
		{[]string{"--booth", "--allow-write-live", state}, "holds " + keyDir},
		{[]string{"--booth", "--allow-write", cacheHome}, "--allow-write " + cacheHome + ": holds " + filepath.Join(cacheHome, "jukebox")},
		// The store's cache moved (JUKEBOX_CACHE_DIR): its tapes and the
		// notes that they verified, which verify of a store URL trusts.
		{[]string{"--booth", "--allow-write-live", storeParent}, "holds " + filepath.Join(storeParent, "tapecache")},
		// --allow-write (staged) takes the same checks, and the overlay.
		{[]string{"--allow-write", outside}, "only apply with --booth"},
		{[]string{"--booth", "--allow-write", filepath.Join(outside, "missing")}, "--allow-write " + filepath.Join(outside, "missing")},
		{[]string{"--booth", "--allow-write", "/"}, "--allow-write /: that would let the agent write anywhere"},
		{[]string{"--booth", "--allow-write", "inner"}, "--allow-write inner: inside the workspace"},
		{[]string{"--booth", "--allow-write", "link"}, "--allow-write link: a symlink"},
		{[]string{"--booth", "--allow-write", "/dev/shm"}, "--allow-write /dev/shm: the booth gives the agent its own /dev/shm"},
		{[]string{"--booth", "--allow-write", keyDir}, "the booth hides " + keyDir},
		{[]string{"--booth", "--allow-write", outside, "--booth-mode", "copy"}, "--allow-write needs the overlay booth"},
		{[]string{"--booth", "--allow-write", outside, "--allow-write-live", outside}, "overlaps --allow-write-live"},
		{[]string{"--booth", "--allow-write", outside, "--allow-write", filepath.Join(outside, "sub")}, "overlaps --allow-write " + outside},
	} {
		args := append(append([]string{"record"}, c.args...), "--", "sh", "-c", "echo ran > ran.txt")
		cmd := jukeboxCmd(t.Context(), ws, args...)
		cmd.Env = append(cmd.Env, "XDG_STATE_HOME="+state, "XDG_CACHE_HOME="+cacheHome, "JUKEBOX_WASM_CACHE_DIR=",
			"JUKEBOX_CACHE_DIR="+filepath.Join(storeParent, "tapecache"))
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("%v: exit %d, want 2 with %q:\n%s", c.args, cmd.ProcessState.ExitCode(), c.want, out)
		}
		if _, err := os.Stat(filepath.Join(ws, "ran.txt")); err == nil {
			t.Fatalf("%v: the agent ran", c.args)
		}
	}
}

// TestBoothSignalEndsTheTree: SIGINT or SIGTERM to jukebox ends a booth
// agent and everything it started, a background child that holds stdout
// included, and jukebox returns.
func TestBoothSignalEndsTheTree(t *testing.T) {
	t.Parallel()
	requireConfinedBooth(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			marker := fmt.Sprintf("%d", 800000+time.Now().UnixNano()%100000)
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd := jukeboxCmd(ctx, t.TempDir(), "record", "-o", filepath.Join(t.TempDir(), "s.jbx"),
				"--booth", "--commit", "never", "--", "sh", "-c", "sleep "+marker+" & echo ready; wait")
			out, err := cmd.StdoutPipe()
			must(t, err)
			must(t, cmd.Start())
			if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
				cmd.Process.Kill()
				t.Fatalf("the agent did not start: %q", line)
			}
			cmd.Process.Signal(sig)
			cmd.Wait()
			if ctx.Err() != nil {
				t.Fatal("jukebox did not return after the signal")
			}
			if alive("sleep\x00" + marker) {
				exec.Command("pkill", "-f", "sleep "+marker).Run()
				t.Fatal("the background child outlived the run")
			}
		})
	}
}

// TestNetNoneRecordsRefusals: under --net none a connection the agent
// tries elsewhere than jukebox's endpoints fails and is on the tape, with
// its address, as a net.refused frame.
func TestNetNoneRecordsRefusals(t *testing.T) {
	t.Parallel()
	requireConfinedBooth(t)
	py := testenv.RequirePython(t)
	tape := filepath.Join(t.TempDir(), "n.jbx")
	agent := `import socket
s = socket.socket(); s.settimeout(5)
try:
    s.connect(("192.0.2.7", 443)); print("connected")
except OSError as e:
    print("refused", e.errno)`
	cmd := jukeboxCmd(t.Context(), t.TempDir(), "record", "-o", tape, "--booth", "--net", "none", "--commit", "never", "--", py, "-c", agent)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "refused") {
		t.Fatalf("%v\n%s", err, out)
	}
	tp, err := tapefmt.Open(tape)
	must(t, err)
	defer tp.Close()
	var got []string
	for i := range tp.Len() {
		f, err := tp.Frame(i)
		must(t, err)
		if f.Kind != tapefmt.KindNetRefused {
			continue
		}
		p, err := f.Decode()
		must(t, err)
		r := p.(*tapefmt.NetRefused)
		got = append(got, r.Family+" "+r.Addr+" "+r.Errno)
	}
	if len(got) != 1 || got[0] != "ipv4 192.0.2.7:443 ENETUNREACH" {
		t.Fatalf("net.refused frames: %q", got)
	}
}

// TestRollbackSaysWhatItChecked: a rollback never claims "the workspace is
// as it was"; it says what was discarded, and for the copy, that the
// agent was not confined.
func TestRollbackSaysWhatItChecked(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mode, want string
	}{
		{"copy", "the copy does not confine"},
		{"auto", "confined, wrote nothing else"},
	} {
		if c.mode == "auto" {
			requireConfinedBooth(t)
		}
		cmd := jukeboxCmd(t.Context(), t.TempDir(), "record", "-o", filepath.Join(t.TempDir(), "r.jbx"),
			"--booth", "--booth-mode", c.mode, "--commit", "never", "--", "sh", "-c", "echo x > x.txt")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.want) || strings.Contains(string(out), "as it was") {
			t.Errorf("--booth-mode %s: %v\n%s", c.mode, err, out)
		}
	}
}

// TestReplayBoothCanWrite: replay --booth without -o writes no tape, so
// nothing is protected; the agent writes its workspace as when recorded.
// (The run's empty tape path once made the whole workspace read-only.)
func TestReplayBoothCanWrite(t *testing.T) {
	t.Parallel()
	requireConfinedBooth(t)
	ws := t.TempDir()
	tape := filepath.Join(t.TempDir(), "w.jbx")
	for _, args := range [][]string{
		{"record", "-o", tape, "--booth", "--commit", "never", "--", "sh", "-c", "echo x > made.txt"},
		{"replay", "--booth", "--commit", "never", tape},
	} {
		out, err := jukeboxCmd(t.Context(), ws, args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "write made.txt") {
			t.Fatalf("%s: %v\n%s", args[0], err, out)
		}
	}
}

// TestNetRefusedNote: connections the booth refused under --net none are
// counted in the result and named in a note; an agent that retries in a
// loop gets the first engine.MaxNetRefusedFrames of them on the tape, not
// one frame per try.
func TestNetRefusedNote(t *testing.T) {
	requireConfinedBooth(t)
	t.Chdir(t.TempDir())
	tape := filepath.Join(t.TempDir(), "n.jbx")
	tries := engine.MaxNetRefusedFrames + 50
	out, errs := wantCode(t, ExitOK, "record", "--json", "--booth", "--net", "none", "--commit", "never", "-o", tape,
		"--", "python3", "-c", fmt.Sprintf("import socket\nfor i in range(%d):\n try:\n  socket.create_connection(('10.1.2.3', 80), timeout=2)\n except OSError: pass", tries))
	var res struct {
		NetRefused int `json:"net_refused"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.NetRefused != tries {
		t.Fatalf("net_refused %d (%v), want %d, in %s", res.NetRefused, err, tries, out)
	}
	if !strings.Contains(errs, fmt.Sprintf("the agent tried %d connections jukebox does not serve", tries)) ||
		!strings.Contains(errs, fmt.Sprintf("the first %d as net.refused frames", engine.MaxNetRefusedFrames)) {
		t.Errorf("no note of the refused connections: %q", errs)
	}
	frames := 0
	for _, err := range openTape(t, tape).Frames(tapefmt.KindNetRefused) {
		must(t, err)
		frames++
	}
	if frames != engine.MaxNetRefusedFrames {
		t.Errorf("%d net.refused frames for %d refusals, want %d", frames, tries, engine.MaxNetRefusedFrames)
	}
}

// TestAllowWrite: a folder outside the workspace given with --allow-write
// is staged as the workspace is: listed with its changes, on the tape by
// root and path, untouched by --commit never, committed with the
// workspace by --commit always, and kept with it by --keep for booth
// commit.
func TestAllowWrite(t *testing.T) {
	requireConfinedBooth(t)
	t.Parallel()
	ws, cache := t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(cache, "old.txt"), []byte("old"), 0o644))
	script := `echo w > a.txt && echo new > "$CACHE/new.txt" && rm "$CACHE/old.txt"`
	record := func(tape string, args ...string) string {
		args = append(append([]string{"record", "--booth", "--allow-write", cache, "-o", filepath.Join(ws, tape)}, args...), "--", "sh", "-c", script)
		cmd := jukeboxCmd(t.Context(), ws, args...)
		cmd.Env = append(cmd.Env, "CACHE="+cache)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := record("never.jbx", "--commit", "never")
	// The --json result: its booth.roots keys are documented.
	jsonOut := record("json.jbx", "--commit", "never", "--json")
	checkShape(t, jsonDoc(t), "record", jsonOut[strings.Index(jsonOut, "{\n"):], map[string]map[string]bool{})
	if !strings.Contains(jsonOut, `"root": "`+cache+`"`) {
		t.Errorf("--json has no booth.roots:\n%s", jsonOut)
	}
	if !strings.Contains(out, "staged with it: "+cache) || !strings.Contains(out, "and staged in "+cache+" (--allow-write): 2 changes") {
		t.Errorf("the listing does not say what is staged where:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(cache, "old.txt")); err != nil || string(b) != "old" {
		t.Errorf("--commit never: old.txt %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(cache, "new.txt")); err == nil {
		t.Error("--commit never: new.txt reached the folder")
	}
	tp := openTape(t, filepath.Join(ws, "never.jbx"))
	var roots []string
	for f, err := range tp.Frames(tapefmt.KindFileChange) {
		must(t, err)
		p, err := f.Decode()
		must(t, err)
		if fc := p.(*tapefmt.FileChange); !fc.IsStep() { // the change set, not the step records
			roots = append(roots, fc.Root+"|"+fc.Path)
		}
	}
	tp.Close()
	if want := []string{"|a.txt", cache + "|new.txt", cache + "|old.txt"}; strings.Join(roots, ",") != strings.Join(want, ",") {
		t.Errorf("file.change frames: %v, want %v", roots, want)
	}
	must(t, os.Remove(filepath.Join(ws, "never.jbx")))

	out = record("keep.jbx", "--commit", "never", "--keep")
	if _, err := os.Stat(filepath.Join(cache, "new.txt")); err == nil {
		t.Fatal("--keep: new.txt reached the folder")
	}
	id := regexp.MustCompile(`--tx (tx-[0-9a-f]+)`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("no transaction id in:\n%s", out)
	}
	cmd := jukeboxCmd(t.Context(), ws, "booth", "commit", "--tx", id[1])
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("booth commit: %v\n%s", err, b)
	}
	if b, err := os.ReadFile(filepath.Join(cache, "new.txt")); err != nil || string(b) != "new\n" {
		t.Errorf("after booth commit: new.txt %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(cache, "old.txt")); err == nil {
		t.Error("after booth commit: old.txt is still there")
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "w\n" {
		t.Errorf("after booth commit: a.txt %q", b)
	}
}
