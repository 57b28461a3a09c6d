//go:build linux

package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/testenv"
	"golang.org/x/sys/unix"
)

// An attempt is one way out of the booth a hostile agent tries. Want is
// what must come of it: "refused" (the command fails) or "contained"
// (it may succeed, but nothing outside the booth sees it). Whatever each
// attempt prints, the catalogue then checks the machine: no file outside
// the workspace changed, the real workspace is as before until commit,
// nothing was written after the run, and the host process lives.
type attempt struct {
	name, sh, want string
}

// escapeAttempts are run in order by one shell; $OUT is a writable
// folder outside the workspace, $MARK a unique name, $VICTIM the pid of
// a host process, $WS the workspace's absolute path.
var escapeAttempts = []attempt{
	{"relative path out of the workspace", `echo x > ../outside/rel`, "refused"},
	{"absolute path", `echo x > "$OUT/abs"`, "refused"},
	{"shell rc in HOME", `echo x >> "$HOME/.bashrc"`, "refused"},
	{"/etc", `echo x > "/etc/$MARK"`, "refused"},
	{"/var/tmp", `echo x > "/var/tmp/$MARK"`, "refused"},
	{"/tmp is private", `echo x > "/tmp/$MARK"`, "contained"},
	{"a file in the host's /tmp, read-only beneath", `[ "$(cat "$HOSTTMP.file")" = host ] && echo x > "$HOSTTMP.file"`, "contained"},
	// Sockets the host makes in its /tmp once the run has begun: the
	// attempt names itself with lateSockMarker and waits until the file
	// $HOSTTMP.go (made empty before the run) says go; the test then
	// listens at $HOSTTMP.late and in $HOSTTMP/empty, a folder that held
	// none before, and writes go into the file (its content reaches the
	// booth through the overlay, where a fifo's writer would reach no
	// reader: the overlay's fifo is a pipe of its own, and the attempt
	// waited out its timeout). The attempt looks for the sockets only then:
	// a path looked up before it was made stays missing in the overlay's
	// cache, which would hide the socket whatever the booth does. Not
	// seeing them counts as reaching them.
	{"a unix socket the host makes in /tmp during the run", `timeout 60 sh -c 'm=` + lateSockMarker + `; until grep -q go "$HOSTTMP.go"; do sleep 0.05; done'; [ -S "$HOSTTMP.late" ] && [ -S "$HOSTTMP/empty/late" ] || exit 0; python3 -c 'import os,socket; socket.socket(socket.AF_UNIX).connect(os.environ["HOSTTMP"] + ".late")' || python3 -c 'import os,socket; socket.socket(socket.AF_UNIX).connect(os.environ["HOSTTMP"] + "/empty/late")'`, "refused"},
	{"a vsock socket (to the hypervisor, past the network namespace)", `python3 -c 'import socket; socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)'`, "refused"},
	{"a datagram to a unix socket in the host's /tmp", `python3 -c 'import os,socket; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"x", os.environ["HOSTTMP"] + ".dgram")'`, "refused"},
	{"a unix socket in the host's /tmp (a database server's)", `python3 -c 'import os,socket; socket.socket(socket.AF_UNIX).connect(os.environ["HOSTTMP"] + ".sock")'`, "refused"},
	{"a unix socket in a folder of the host's /tmp (tmux, ssh-agent, X11)", `python3 -c 'import os,socket; socket.socket(socket.AF_UNIX).connect(os.environ["HOSTTMP"] + "/S.agent")'`, "refused"},
	{"a unix socket deep in the host's /tmp", `python3 -c 'import os,socket; socket.socket(socket.AF_UNIX).connect(os.environ["HOSTTMP"] + "/deep/er/sock")'`, "refused"},
	{"/dev/shm is private", `echo x > "/dev/shm/$MARK"`, "contained"},
	{"symlink made before the run", `echo x > out-before/sym-before`, "refused"},
	{"symlink made during the run", `ln -s "$OUT" during && echo x > during/sym-during`, "refused"},
	{"/proc/self/root", `echo x > "/proc/self/root$OUT/procroot"`, "refused"},
	{"/proc/1/root (the init)", `echo x > "/proc/1/root$OUT/init-root"`, "refused"},
	{"mount --bind", `mkdir -p b && mount --bind "$OUT" b && echo x > b/bind`, "refused"},
	{"remount / read-write", `mount -o remount,rw / && echo x > "/etc/$MARK.rw"`, "refused"},
	{"umount the workspace overlay", `umount -l "$WS" && echo pwned > a.txt && echo pwned > "$WS/a.txt"`, "refused"},
	{"umount the tmpfs over the booth state", `umount -l "$WS/.jukebox/booth" && ls "$WS/.jukebox/booth" | grep -q .`, "refused"},
	{"new user namespace", `unshare -Ur true`, "refused"},
	{"new user namespace with python", `python3 -c 'import os; os.unshare(os.CLONE_NEWUSER)'`, "refused"},
	{"setns into the host", `nsenter -t 1 -m -U true`, "refused"},
	{"hold CAP_SYS_ADMIN (the init's, which mounts)", `python3 -c 'import sys; st=dict(l.split(":\t") for l in open("/proc/self/status").read().splitlines() if l.startswith("Cap")); sys.exit(0 if any(int(st[k],16)>>21&1 for k in ("CapEff","CapPrm","CapBnd","CapAmb","CapInh")) else 1)'`, "refused"},
	{"trace the init", `python3 -c 'import ctypes,sys; l=ctypes.CDLL(None); sys.exit(0 if l.ptrace(16, 1, 0, 0) == 0 else 1)'`, "refused"},
	{"read the init's environment", `grep -q JUKEBOX /proc/1/environ`, "refused"},
	{"signal a host process", `kill -9 "$VICTIM"`, "refused"},
	{"delete the tape being recorded", `rm -rf tapes`, "refused"},
	{"write beside the tape", `echo x > tapes/planted.jbx`, "refused"},
	{"a disk device", `[ -e "/dev/$(ls /sys/block | head -n1)" ]`, "refused"},
	{"the host's terminals", `ls /dev/pts | grep -v ptmx | grep -q .`, "refused"},
	{"the host's SysV shared memory", `[ -n "$SHMID" ] && ipcs -m | grep -qw "$SHMID"`, "refused"},
	{"rewrite a kernel setting (core_pattern, as root)", `cat /proc/sys/kernel/core_pattern > /proc/sys/kernel/core_pattern`, "refused"},
	{"io_uring (its connect and openat pass seccomp unseen)", `python3 -c 'import ctypes,sys; l=ctypes.CDLL(None); b=ctypes.create_string_buffer(120); sys.exit(0 if l.syscall(425, 4, b) >= 0 else 1)'`, "refused"},
	{"type into a terminal (TIOCSTI)", `python3 -c 'import os,fcntl,termios; m,s=os.openpty(); os.setsid(); fcntl.ioctl(s, termios.TIOCSCTTY, 0); fcntl.ioctl(s, termios.TIOCSTI, b"x")'`, "refused"},
	{"end the booth's init with a signal it has no use for", `for s in ABRT SEGV BUS TRAP ILL FPE SYS XCPU; do kill -$s 1; done; sleep 0.3; kill -0 1`, "contained"},
	{"the host's /run", `ls -A /run | grep -q .`, "refused"},
	{"the session bus in XDG_RUNTIME_DIR", `python3 -c 'import os,socket; socket.socket(socket.AF_UNIX).connect(os.environ["XDG_RUNTIME_DIR"] + "/bus")'`, "refused"},
	{"the ssh agent", `python3 -c 'import os,socket; socket.socket(socket.AF_UNIX).connect(os.environ["SSH_AUTH_SOCK"])'`, "refused"},
	{"the host file given as stdin, reopened by /proc/self/fd/0", `echo X >> /proc/self/fd/0 && echo Y > /dev/stdin`, "contained"},
	{"stdin is the host file itself", `[ "$(readlink /proc/self/fd/0)" = "$STDINPATH" ]`, "refused"},
	{"a descriptor jukebox inherited", `[ "$(readlink /proc/self/fd/$LEAKFD)" = "$LEAKPATH" ]`, "refused"},
	// The child waits for the run's end ($OUT/ended, made once Exec has
	// returned; at most a minute), so it can write only if it outlived
	// the run; lateMarker names it in the host's process list.
	{"a setsid child writes after the run", `setsid sh -c 'm=` + lateMarker + `; n=0; while [ ! -e "$OUT/ended" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done; echo late > late.txt; echo late > "$OUT/late"' </dev/null >/dev/null 2>&1 &`, "contained"},
}

// catalogueScript runs every attempt and prints "NAME: ok|failed".
func catalogueScript() string {
	var b strings.Builder
	for _, a := range escapeAttempts {
		fmt.Fprintf(&b, "if ( %s ) >/dev/null 2>&1; then echo %s; else echo %s; fi\n",
			a.sh, strconv.Quote(a.name+": ok"), strconv.Quote(a.name+": failed"))
	}
	return b.String()
}

// catalogueRun is what one booth run of the catalogue saw.
type catalogueRun struct {
	Output    string     `json:"output"`
	Result    ExecResult `json:"result"`
	Diff      []string   `json:"diff"`
	Err       string     `json:"err,omitempty"`
	Survivors []string   `json:"survivors,omitempty"` // host processes of the run alive after Exec returned
}

// lateMarker is in the command line of the catalogue's setsid child.
const lateMarker = "jbx-late-child-3f9c"

// lateSockMarker is in the command line of the catalogue's attempt that
// waits for the host's late sockets.
const lateSockMarker = "jbx-late-sock-7d2e"

// lateSockets waits (at most two minutes, or until the test ends) for
// the catalogue's attempt to start, then listens at dir.late and at
// dir/empty/late, world-writable, as a host server started during the
// run would.
func lateSockets(t *testing.T, dir string) {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
		select {
		case <-done:
			return
		case <-time.After(20 * time.Millisecond):
		}
		if lateAttempt(dir) {
			for _, p := range []string{dir + ".late", filepath.Join(dir, "empty", "late")} {
				if ln, err := net.Listen("unix", p); err == nil {
					os.Chmod(p, 0o777)
					t.Cleanup(func() { ln.Close() })
				}
			}
			// The attempt reads the file until it says go: tell it, in
			// place (the booth sees this inode beneath its /tmp).
			f, err := os.OpenFile(dir+".go", os.O_WRONLY, 0)
			if err == nil {
				f.WriteString("go\n")
				f.Close()
			}
			return
		}
	}
}

// lateAttempt reports whether this test's late-socket attempt runs: a
// process with lateSockMarker in its command line and HOSTTMP=dir in its
// environment (the catalogue runs as root and as nobody at once, each
// with a HOSTTMP of its own, and each must answer its own attempt).
func lateAttempt(dir string) bool {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(lateSockMarker)) {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", p.Name(), "environ"))
		if err == nil && bytes.Contains(append([]byte{0}, env...), []byte("\x00HOSTTMP="+dir+"\x00")) {
			return true
		}
	}
	return false
}

// listenDgram binds a world-writable unix datagram socket at p until the
// test ends.
func listenDgram(t *testing.T, p string) {
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: p, Net: "unixgram"})
	must(t, err)
	must(t, os.Chmod(p, 0o777))
	t.Cleanup(func() { c.Close(); os.Remove(p) })
}

// survivors lists the host's processes whose command line holds
// lateMarker: the booth's PID namespace is gone when Exec returns, so
// there must be none.
func survivors() []string { return findProcs(lateMarker) }

// findProcs lists the host's processes whose command line holds marker.
func findProcs(marker string) []string {
	var found []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			found = append(found, p.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// catalogueEnv is a workspace with a folder beside it, a symlink out and
// a tape folder, laid out for uid/gid.
type catalogueEnv struct {
	base, ws, out, home, mark string
	runtime, sshSock          string // a session bus and an ssh agent the agent must not reach
	victim                    *exec.Cmd
	shmid                     string // a SysV segment on the host, "" without ipcmk
	hostTmp                   string // a folder in the host's /tmp: a file, listening sockets
}

func newCatalogueEnv(t *testing.T, uid, gid int) *catalogueEnv {
	t.Helper()
	// Outside /tmp, where the agent's writes are private (contained, not
	// refused): the attempts on the folder beside the workspace must meet
	// the read-only host.
	base := outsideTmp(t)
	e := &catalogueEnv{base: base, ws: filepath.Join(base, "ws"), out: filepath.Join(base, "outside"),
		home: filepath.Join(base, "home"), mark: fmt.Sprintf("jukebox-escape-%d-%d", os.Getpid(), time.Now().UnixNano())}
	mkTree(t, e.ws, map[string]string{"a.txt": "a", "tapes/run.jbx": "tape", "out-before": "-> " + e.out})
	mkTree(t, e.out, map[string]string{"keep": "k", "task.md": "the task\n"}) // task.md: the agent's stdin
	mkTree(t, e.home, map[string]string{".bashrc": "# rc\n"})
	// The booth key lives outside HOME: Begin makes its folder, which the
	// booth hides, and hiding a folder under the private /tmp makes its
	// parents there (HOME among them, when HOME is under /tmp as here).
	must(t, os.MkdirAll(filepath.Join(base, "state"), 0o700))
	for _, d := range []string{e.ws, e.out, e.home, filepath.Join(base, "state")} {
		must(t, filepath.Walk(d, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, gid)
		}))
	}
	if out, err := exec.Command("ipcmk", "-M", "4096").Output(); err == nil {
		// "Shared memory id: N"
		if f := strings.Fields(string(out)); len(f) > 0 {
			e.shmid = f[len(f)-1]
			t.Cleanup(func() { exec.Command("ipcrm", "-m", e.shmid).Run() })
		}
	}
	// Outside /tmp, which the booth makes private anyway.
	sockBase := filepath.Join("/var/tmp", e.mark+".sockets")
	must(t, os.MkdirAll(sockBase, 0o755))
	t.Cleanup(func() { os.RemoveAll(sockBase) })
	e.runtime, e.sshSock = filepath.Join(sockBase, "runtime"), filepath.Join(sockBase, "ssh", "agent.sock")
	for _, sock := range []string{filepath.Join(e.runtime, "bus"), e.sshSock} {
		must(t, os.MkdirAll(filepath.Dir(sock), 0o755))
		listenUnix(t, sock)
	}
	e.hostTmp = hostTmpSockets(t, e.mark)
	must(t, os.Mkdir(filepath.Join(e.hostTmp, "empty"), 0o755))
	listenDgram(t, e.hostTmp+".dgram")
	must(t, os.WriteFile(e.hostTmp+".go", nil, 0o644))
	t.Cleanup(func() { os.Remove(e.hostTmp + ".go") })
	go lateSockets(t, e.hostTmp)
	e.victim = exec.Command("sleep", "600")
	if os.Getuid() == 0 { // a non-root test run is the victim's user already
		e.victim.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	must(t, e.victim.Start())
	t.Cleanup(func() {
		e.victim.Process.Kill()
		e.victim.Wait()
		for _, p := range []string{"/etc/" + e.mark, "/etc/" + e.mark + ".rw", "/var/tmp/" + e.mark, "/tmp/" + e.mark, "/dev/shm/" + e.mark} {
			os.Remove(p)
		}
	})
	return e
}

func (e *catalogueEnv) env() []string {
	return append(os.Environ(), "OUT="+e.out, "MARK="+e.mark, "WS="+e.ws, "HOME="+e.home, "XDG_STATE_HOME="+filepath.Join(e.base, "state"), // the booth key
		"VICTIM="+strconv.Itoa(e.victim.Process.Pid), "SHMID="+e.shmid,
		"XDG_RUNTIME_DIR="+e.runtime, "SSH_AUTH_SOCK="+e.sshSock, "HOSTTMP="+e.hostTmp)
}

// runCatalogue runs the catalogue in an overlay booth over ws and commits
// what it staged: a confined run commits nothing that reaches outside.
func runCatalogue(ws string, env []string) catalogueRun {
	var run catalogueRun
	tx, err := Begin(ws, Options{})
	if err != nil {
		run.Err = err.Error()
		return run
	}
	// A descriptor this process holds without close-on-exec, as one
	// inherited from a careless parent would be: it must not reach the
	// command.
	leakPath := filepath.Join(filepath.Dir(ws), "outside", "keep")
	if f, err := os.Open(leakPath); err == nil {
		if fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD, 20); err == nil {
			defer unix.Close(fd)
			env = append(env, "LEAKFD="+strconv.Itoa(fd), "LEAKPATH="+leakPath)
		}
		f.Close()
	}
	// Its stdin is a file outside the workspace, as `< task.md` gives.
	stdinPath := filepath.Join(filepath.Dir(ws), "outside", "task.md")
	stdin, err := os.Open(stdinPath)
	if err != nil {
		run.Err = err.Error()
		return run
	}
	defer stdin.Close()
	env = append(env, "STDINPATH="+stdinPath)
	var out bytes.Buffer
	run.Result, err = Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", catalogueScript()}, Env: env,
		Stdin: stdin, Stdout: &out, Stderr: io.Discard, Notice: io.Discard, Mode: ModeOverlay,
		Protect: []string{filepath.Join(ws, "tapes", "run.jbx")}})
	run.Output = out.String()
	run.Survivors = survivors()
	for _, kv := range env {
		if dir, ok := strings.CutPrefix(kv, "OUT="); ok {
			os.WriteFile(filepath.Join(dir, "ended"), nil, 0o644) // a survivor writes now
		}
	}
	if err != nil {
		run.Err = err.Error()
		tx.Rollback(ctx)
		return run
	}
	cs, err := tx.Diff()
	if err == nil {
		for _, c := range cs.Changes {
			run.Diff = append(run.Diff, c.Path)
		}
		_, err = tx.Commit(ctx)
	}
	if err != nil {
		run.Err = err.Error()
	}
	return run
}

// TestMain's hook: run the catalogue as the user this process is.
func catalogueChild() {
	ws := os.Getenv("SANDBOX_CATALOGUE_WS")
	if ws == "" {
		return
	}
	json.NewEncoder(os.Stdout).Encode(runCatalogue(ws, os.Environ()))
	os.Exit(0)
}

func TestEscapeCatalogueAsRoot(t *testing.T) {
	if os.Getuid() != 0 {
		testenv.Unavailable(t, "root (TestEscapeCatalogueAsUser covers this user)", "run the tests as root")
	}
	requireOverlay(t)
	e := newCatalogueEnv(t, 0, 0)
	checkCatalogue(t, e, runCatalogue(e.ws, e.env()))
}

// TestEscapeCatalogueAsUser runs the catalogue as an ordinary user, who
// gets the same confinement (root in the booth's first user namespace,
// then back to their own uid).
func TestEscapeCatalogueAsUser(t *testing.T) {
	uid, gid := os.Getuid(), os.Getgid()
	var run catalogueRun
	var e *catalogueEnv
	if uid == 0 {
		uid, gid = 65534, 65534
		e = newCatalogueEnv(t, uid, gid)
		// The test binary's folder is private to root: copy it out.
		bin := filepath.Join(e.base, "sandbox.test")
		testenv.SelfAt(t, bin)
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(e.env(), "SANDBOX_CATALOGUE_WS="+e.ws)
		cmd.Dir = e.base
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("catalogue as uid %d: %v\n%s", uid, err, out)
		}
		must(t, json.Unmarshal(out, &run))
	} else {
		requireOverlay(t)
		e = newCatalogueEnv(t, uid, gid)
		run = runCatalogue(e.ws, e.env())
	}
	if run.Err != "" && strings.Contains(run.Err, "namespace overlay refused") {
		testenv.Unavailable(t, "the confined booth for a non-root user, refused here ("+run.Err+")",
			"run on Linux with unprivileged user namespaces allowed")
	}
	checkCatalogue(t, e, run)
}

func requireOverlay(t *testing.T) {
	t.Helper()
	if caps := Probe(ctx, t.TempDir()); !caps.Overlay {
		testenv.Unavailable(t, fmt.Sprintf("the confined booth (overlayfs in a user namespace), refused here (%v)", caps.Notes),
			"run on Linux with unprivileged user namespaces allowed")
	}
}

func checkCatalogue(t *testing.T, e *catalogueEnv, run catalogueRun) {
	t.Helper()
	if run.Err != "" {
		t.Fatalf("booth run: %s\noutput:\n%s", run.Err, run.Output)
	}
	t.Logf("catalogue:\n%s", run.Output)
	if !run.Result.Confined {
		t.Errorf("result says the run was not confined: %+v", run.Result)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(run.Output), "\n") {
		if name, res, ok := strings.Cut(line, ": "); ok {
			got[name] = res
		}
	}
	for _, a := range escapeAttempts {
		res, ok := got[a.name]
		switch {
		case !ok:
			t.Errorf("%s: never ran (output %q)", a.name, run.Output)
		case a.want == "refused" && res != "failed":
			t.Errorf("%s: not refused: `%s` succeeded", a.name, a.sh)
		}
	}
	// No process of the run is left (run.Survivors) to write later: the
	// folder holds what the test put there and the run's end mark alone.
	if diff := readTree(t, e.out); len(diff) != 3 || diff["keep"] != "k" || diff["task.md"] != "the task\n" || diff["ended"] != "" {
		t.Errorf("the folder outside the workspace changed: %v", diff)
	}
	if rc, _ := os.ReadFile(filepath.Join(e.home, ".bashrc")); string(rc) != "# rc\n" {
		t.Errorf("$HOME/.bashrc changed: %q", rc)
	}
	for _, p := range []string{"/etc/" + e.mark, "/etc/" + e.mark + ".rw", "/var/tmp/" + e.mark, "/tmp/" + e.mark, "/dev/shm/" + e.mark} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was written on the host", p)
		}
	}
	if b, err := os.ReadFile(e.hostTmp + ".file"); err != nil || string(b) != "host" {
		t.Errorf("the file in the host's /tmp: %q, %v", b, err)
	}
	if err := e.victim.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the host process was signalled: %v", err)
	}
	if a, _ := os.ReadFile(filepath.Join(e.ws, "a.txt")); string(a) != "a" {
		t.Errorf("a.txt is %q after the commit: the umount attempt reached the real workspace", a)
	}
	if tape, err := os.ReadFile(filepath.Join(e.ws, "tapes", "run.jbx")); err != nil || string(tape) != "tape" {
		t.Errorf("the tape: %q, %v", tape, err)
	}
	for _, p := range run.Diff {
		if p == "tapes" || strings.HasPrefix(p, "tapes/") || p == "late.txt" {
			t.Errorf("change set holds %s", p)
		}
	}
	if len(run.Survivors) > 0 {
		t.Errorf("processes of the run outlived it: %q", run.Survivors)
	}
	if _, err := os.Lstat(filepath.Join(e.ws, "late.txt")); err == nil {
		t.Errorf("a process outlived the run and wrote late.txt into the committed workspace")
	}
}

// TestNetNone: in its own network namespace the child reaches the
// endpoints jukebox serves for the run, and nothing else on the host.
func TestNetNone(t *testing.T) {
	requireOverlay(t)
	serve := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				io.WriteString(c, "hello from "+ln.Addr().String())
				c.Close()
			}
		}()
		return ln
	}
	served, other := serve(), serve()
	// A socket with a path on the host, where host daemons keep theirs.
	sock := filepath.Join("/run", fmt.Sprintf("jukebox-test-%d.sock", os.Getpid()))
	if uln, err := net.Listen("unix", sock); err == nil {
		t.Cleanup(func() { uln.Close() })
	} else {
		sock = ""
	}
	ws := t.TempDir()
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	script := `python3 - "$SERVED" "$OTHER" $SOCK <<'PY'
import socket, sys, threading
# A server of the agent's own on the booth's loopback (a dev server, a
# test fixture): its own to reach.
own = socket.socket(); own.bind(("127.0.0.1", 0)); own.listen()
def answer():
    c, _ = own.accept(); c.sendall(b"hello from the booth"); c.close()
threading.Thread(target=answer, daemon=True).start()
mine = "127.0.0.1:%d" % own.getsockname()[1]
for name, addr in (("own", mine), ("served", sys.argv[1]), ("other", sys.argv[2]), ("outside", "192.0.2.1:80")):
    host, port = addr.rsplit(":", 1)
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect((host, int(port))); print(name, "reached", s.recv(100).decode())
    except OSError as e:
        print(name, "refused", e.errno)
if len(sys.argv) > 3:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(sys.argv[3]); print("run-socket reached")
    except OSError as e:
        print("run-socket refused", e.errno)
PY`
	var out bytes.Buffer
	var mu sync.Mutex
	var refused []string
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", script}, Stdout: &out, Stderr: &out, Notice: io.Discard,
		Env: append(os.Environ(), "SERVED="+served.Addr().String(), "OTHER="+other.Addr().String(), "SOCK="+sock),
		Net: NetNone, Endpoints: []string{served.Addr().String()},
		OnNetRefused: func(r NetRefusal) {
			mu.Lock()
			defer mu.Unlock()
			refused = append(refused, r.Family+" "+r.Addr+" "+r.Errno)
		}})
	must(t, err)
	// Each connection refused on its way out is reported with its address;
	// loopback is the booth's own (the host's other port is not there,
	// and the kernel refuses it in the booth), and the unix socket is not
	// over IP.
	want := []string{"ipv4 192.0.2.1:80 ENETUNREACH"}
	if strings.Join(refused, "\n") != strings.Join(want, "\n") {
		t.Errorf("refusals reported:\n%s\nwant:\n%s", strings.Join(refused, "\n"), strings.Join(want, "\n"))
	}
	got := out.String()
	if res.ExitCode != 0 || !strings.Contains(got, "served reached hello from "+served.Addr().String()) ||
		!strings.Contains(got, "own reached hello from the booth") ||
		!strings.Contains(got, "other refused") || !strings.Contains(got, "outside refused") ||
		(sock != "" && !strings.Contains(got, "run-socket refused")) {
		t.Fatalf("exit %d, output:\n%s", res.ExitCode, got)
	}
}

// TestNetNoneNeedsOverlay: the copy cannot confine, so it refuses rather
// than run with the host's network.
func TestNetNoneNeedsOverlay(t *testing.T) {
	ws := t.TempDir()
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	_, err = Exec(ctx, tx, ExecOptions{Args: []string{"true"}, Net: NetNone, Mode: ModeCopy, Notice: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "--net none needs the overlay") {
		t.Fatalf("err = %v", err)
	}
}

// TestWriteLive: an --allow-write-live folder is written directly, and
// nothing of it is staged; its neighbour stays read-only.
func TestWriteLive(t *testing.T) {
	requireOverlay(t)
	base := outsideTmp(t) // the booth's /tmp takes private writes
	ws, cache, other := filepath.Join(base, "ws"), filepath.Join(base, "cache"), filepath.Join(base, "other")
	for _, d := range []string{ws, cache, other} {
		must(t, os.Mkdir(d, 0o755))
	}
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	var out bytes.Buffer
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", `echo c > "$1/c" && echo w > w.txt; echo o > "$2/o" || echo refused`, "sh", cache, other},
		Stdout: &out, Stderr: io.Discard, Notice: io.Discard, WriteLive: []string{cache}})
	must(t, err)
	if res.ExitCode != 0 || out.String() != "refused\n" {
		t.Fatalf("exit %d, output %q", res.ExitCode, out.String())
	}
	if b, err := os.ReadFile(filepath.Join(cache, "c")); err != nil || string(b) != "c\n" {
		t.Fatalf("live write: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(other, "o")); err == nil {
		t.Fatal("the neighbour folder was written")
	}
	cs, err := tx.Diff()
	must(t, err)
	if got := ops(cs); got != "write w.txt" {
		t.Fatalf("change set:\n%s", got)
	}
	// A socket of the host's in the live folder (a tmux server's: its
	// run-shell ran commands outside the booth) is not connected to.
	ln, err := net.Listen("unix", filepath.Join(cache, "host.sock"))
	must(t, err)
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	out.Reset()
	res, err = Exec(ctx, tx, ExecOptions{Args: []string{"python3", "-c", `import socket, sys
try:
    socket.socket(socket.AF_UNIX).connect(sys.argv[1]); print("connected")
except OSError as e:
    print("refused", e.errno)`, filepath.Join(cache, "host.sock")},
		Stdout: &out, Stderr: &out, Notice: io.Discard, WriteLive: []string{cache}})
	must(t, err)
	if !strings.HasPrefix(out.String(), "refused") {
		t.Errorf("a socket in the live folder: %q", out.String())
	}
	select {
	case <-accepted:
		t.Error("the host's socket in the live folder accepted the agent's connection")
	default:
	}
}

// TestProtectTapeInWorkspaceRoot: a tape written in the workspace's own
// folder is kept read-only alone (its folder is the workspace, which must
// stay writable).
func TestProtectTapeInWorkspaceRoot(t *testing.T) {
	requireOverlay(t)
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"run.jbx": "tape"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	var out bytes.Buffer
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", `echo x >> run.jbx || echo append refused; rm -f run.jbx || echo rm refused; echo w > w.txt`},
		Stdout: &out, Stderr: io.Discard, Notice: io.Discard, Protect: []string{filepath.Join(ws, "run.jbx")}})
	must(t, err)
	if res.ExitCode != 0 || out.String() != "append refused\nrm refused\n" {
		t.Fatalf("exit %d, output %q", res.ExitCode, out.String())
	}
	cs, err := tx.Diff()
	must(t, err)
	if got := ops(cs); got != "write w.txt" {
		t.Fatalf("change set:\n%s", got)
	}
}

// TestKeyHidden: the key that signs journals is out of the agent's reach
// (with it, an agent could forge a journal a later recovery would apply).
func TestKeyHidden(t *testing.T) {
	requireOverlay(t)
	dir, err := os.MkdirTemp("/var/tmp", "jukebox-keytest-") // not under the booth's private /tmp
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	key := filepath.Join(dir, "jukebox", "booth.key")
	ws := t.TempDir()
	opts := Options{KeyFile: key}
	tx, err := Begin(ws, opts)
	must(t, err)
	must(t, tx.Files().WriteFile("a.txt", []byte("a"), 0o644))
	_, err = tx.Commit(ctx) // makes the key
	must(t, err)
	if _, err := os.Stat(key); err != nil {
		t.Fatalf("no key after a commit: %v", err)
	}
	tx, err = Begin(ws, opts)
	must(t, err)
	defer tx.Rollback(ctx)
	var out bytes.Buffer
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", `cat "$1" >/dev/null 2>&1 && echo read || echo hidden; ls "$(dirname "$1")"`, "sh", key},
		Stdout: &out, Stderr: io.Discard, Notice: io.Discard})
	must(t, err)
	if res.ExitCode != 0 || out.String() != "hidden\n" {
		t.Fatalf("exit %d, output %q", res.ExitCode, out.String())
	}
	// The default key's folder, when another is named (XDG_STATE_HOME,
	// --key-file): the key of every run without them was readable.
	home := filepath.Join(dir, "home")
	deflt := filepath.Join(home, ".local", "state", "jukebox", "booth.key")
	must(t, os.MkdirAll(filepath.Dir(deflt), 0o700))
	must(t, os.WriteFile(deflt, make([]byte, 32), 0o600))
	t.Setenv("HOME", home)
	out.Reset()
	res, err = Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", `cat "$1" >/dev/null 2>&1 && echo read || echo hidden`, "sh", deflt},
		Stdout: &out, Stderr: io.Discard, Notice: io.Discard})
	must(t, err)
	if res.ExitCode != 0 || out.String() != "hidden\n" {
		t.Errorf("the default key beside another: exit %d, output %q", res.ExitCode, out.String())
	}
	// jukebox's cache: compiled WASI tools that jukebox runs unconfined,
	// the roots it trusts.
	cache := filepath.Join(dir, "cache")
	tool := filepath.Join(cache, "jukebox", "wasm", "tool")
	must(t, os.MkdirAll(filepath.Dir(tool), 0o755))
	must(t, os.WriteFile(tool, []byte("code"), 0o644))
	t.Setenv("XDG_CACHE_HOME", cache)
	out.Reset()
	res, err = Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", `cat "$1" >/dev/null 2>&1 && echo read || echo hidden`, "sh", tool},
		Stdout: &out, Stderr: io.Discard, Notice: io.Discard})
	must(t, err)
	if res.ExitCode != 0 || out.String() != "hidden\n" {
		t.Errorf("jukebox's cache: exit %d, output %q", res.ExitCode, out.String())
	}
}

// TestExecOwnSession: the confined command leads no group of jukebox's. A
// process group reaches across PID namespaces, so `kill 0` from an agent
// in jukebox's group signalled jukebox and the shell job it runs in; the
// booth's init now leads a session of its own.
func TestExecOwnSession(t *testing.T) {
	requireOverlay(t)
	ws := t.TempDir()
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	got := make(chan os.Signal, 1)
	signal.Notify(got, syscall.SIGWINCH) // ignored by default: harmless to the test run if it arrives
	defer signal.Stop(got)
	var out bytes.Buffer
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"python3", "-c",
		"import os, signal; os.kill(0, signal.SIGWINCH); print(os.getsid(0), os.getpgrp())"},
		Stdout: &out, Stderr: &out, Notice: io.Discard, Mode: ModeOverlay})
	must(t, err)
	if res.ExitCode != 0 || !res.Confined {
		t.Fatalf("exit %d, confined %v: %s", res.ExitCode, res.Confined, out.String())
	}
	// Inside the PID namespace the init is 1; a session or group led from
	// outside the namespace reads as 0 there.
	if strings.Fields(out.String())[0] != "1" {
		t.Errorf("the command's session (getsid) is %q, want the booth's init (1)", out.String())
	}
	select {
	case <-got:
		t.Error("kill(0, SIGWINCH) from inside the booth reached the process that runs it")
	case <-time.After(300 * time.Millisecond):
	}
}

// TestNoticeBeforeTheAgentRuns: the booth says it is confined while the
// agent runs, not after it (a long run said nothing until its end). The
// agent waits for the notice: the notice's writer answers it.
func TestNoticeBeforeTheAgentRuns(t *testing.T) {
	requireOverlay(t)
	tx, err := Begin(t.TempDir(), Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	r, w, err := os.Pipe()
	must(t, err)
	defer r.Close()
	var notice bytes.Buffer
	var out bytes.Buffer
	// Waiting at most 10 s: the notice came after the run before.
	agent := `import select, sys
ready, _, _ = select.select([sys.stdin], [], [], 10)
print("heard:", sys.stdin.readline().strip() if ready else "nothing")`
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"python3", "-c", agent}, Stdin: r, Stdout: &out, Stderr: &out, Mode: ModeOverlay,
		Notice: writerFunc(func(p []byte) (int, error) {
			notice.Write(p)
			w.Write([]byte("the notice came first\n"))
			w.Close()
			return len(p), nil
		})})
	w.Close()
	must(t, err)
	if res.ExitCode != 0 || out.String() != "heard: the notice came first\n" || !strings.Contains(notice.String(), "confined") {
		t.Fatalf("exit %d, the agent heard %q, notice %q", res.ExitCode, out.String(), notice.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestOverlayAfterACrash: the overlay is volatile, which marks its work
// folder; a work folder that a crash left behind (jukebox killed while its
// agent ran) is made anew, so the transaction's next run is confined
// again rather than refused or sent to the copy fallback. What was staged
// before the crash is still there.
func TestOverlayAfterACrash(t *testing.T) {
	requireOverlay(t)
	ws := t.TempDir()
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	run := func(sh string) {
		t.Helper()
		var out bytes.Buffer
		res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", sh}, Stdout: &out, Stderr: &out, Notice: io.Discard, Mode: ModeOverlay})
		if err != nil || res.ExitCode != 0 || !res.Confined {
			t.Fatalf("%s: exit %d, confined %v, %v: %s", sh, res.ExitCode, res.Confined, err, out.String())
		}
	}
	run("echo one > one.txt")
	must(t, os.MkdirAll(filepath.Join(tx.dir, "work", "work", "incompat", "volatile"), 0o700))
	run("cat one.txt > two.txt")
	must(t, tx.Flush())
	cs, err := tx.Diff()
	must(t, err)
	if len(cs.Changes) != 2 {
		t.Errorf("staged %v, want one.txt and two.txt", cs.Changes)
	}
}
