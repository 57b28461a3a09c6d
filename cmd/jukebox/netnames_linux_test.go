//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// netAgent resolves api.example.test through the booth's resolver and
// connects to it on each port given, printing what happened.
const netAgent = `import socket, sys
try:
    ip = socket.gethostbyname("api.example.test"); print("resolved", ip)
except OSError as e:
    print("unresolved", e); sys.exit(0)
for port in sys.argv[1:]:
    s = socket.socket(); s.settimeout(5)
    try:
        s.connect((ip, int(port))); print(port, "connected")
    except OSError as e:
        print(port, "refused", e.errno)
`

// netRecord runs `jukebox record --booth --net none` of netAgent with
// ports, as root or as the user nobody, and returns its output and the
// tape's net.refused and net.conn frames as JSON objects.
func netRecord(t *testing.T, nobody bool, flags []string, ports ...string) (string, []map[string]any) {
	t.Helper()
	requireConfinedBooth(t)
	py := testenv.RequirePython(t)
	base := t.TempDir()
	must(t, os.Chmod(filepath.Dir(base), 0o755))
	must(t, os.Chmod(base, 0o755))
	ws, state, tape := filepath.Join(base, "ws"), filepath.Join(base, "state"), filepath.Join(base, "state", "n.jbx")
	must(t, os.Mkdir(ws, 0o755))
	must(t, os.Mkdir(state, 0o700))
	bin := os.Args[0]
	if nobody {
		if py = "/usr/bin/python3"; !executable(py) { // root's own Python may lie where nobody cannot read
			testenv.Unavailable(t, "/usr/bin/python3, for the user nobody", "install python3")
		}
		bin = filepath.Join(base, "jukebox.test") // the test binary's folder is private to root
		testenv.SelfAt(t, bin)
		must(t, os.Chown(ws, 65534, 65534))
		must(t, os.Chown(state, 65534, 65534))
	}
	args := append([]string{"record", "-o", tape, "--booth", "--net", "none", "--commit", "never"}, flags...)
	cmd := exec.CommandContext(t.Context(), bin, append(append(args, "--", py, "-c", netAgent), ports...)...)
	cmd.Env = append(os.Environ(), mainEnv+"=1", "XDG_STATE_HOME="+state, "HOME="+state)
	cmd.Dir = ws
	if nobody {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("record: %v\n%s", err, out)
	}
	var frames []map[string]any
	for f, err := range openTape(t, tape).Frames(tapefmt.KindNetRefused, tapefmt.KindNetConn) {
		must(t, err)
		m := map[string]any{"kind": f.Kind.String()}
		must(t, json.Unmarshal(f.Payload, &m))
		frames = append(frames, m)
	}
	return string(out), frames
}

// asRootAndNobody runs f as root and as the user nobody (when the tests
// run as root).
func asRootAndNobody(t *testing.T, f func(t *testing.T, nobody bool)) {
	t.Run("root", func(t *testing.T) { f(t, false) })
	t.Run("nobody", func(t *testing.T) {
		if os.Getuid() != 0 {
			testenv.Unavailable(t, "root, to run the booth as the user nobody", "run the tests as root")
		}
		f(t, true)
	})
}

// TestNetNoneNamesTheHost: under --booth --net none an agent resolves
// api.example.test and connects to it directly on 443, ignoring the proxy
// (a client with a pinned certificate or a trust store of its own). The
// booth's resolver answers; the connection is refused, and the refusal on
// the tape and in the note names api.example.test, not the resolver
// (before, the DNS query itself was refused and the tape held only the
// resolver's address).
func TestNetNoneNamesTheHost(t *testing.T) {
	t.Parallel()
	asRootAndNobody(t, func(t *testing.T, nobody bool) {
		out, frames := netRecord(t, nobody, nil, "443")
		if !strings.Contains(out, "resolved 198.18.") || !strings.Contains(out, "443 refused 111") {
			t.Fatalf("agent output:\n%s", out)
		}
		if len(frames) != 1 || frames[0]["kind"] != "net.refused" || frames[0]["host"] != "api.example.test" ||
			!strings.HasSuffix(fmt.Sprint(frames[0]["addr"]), ":443") || frames[0]["errno"] != "ECONNREFUSED" {
			t.Fatalf("frames %v, want one net.refused naming api.example.test:443\n%s", frames, out)
		}
		if !strings.Contains(out, "api.example.test:443") {
			t.Errorf("the note does not name the host:\n%s", out)
		}
	})
}

// TestHermeticRefusesPlainTCP: with --hermetic, a plain TCP connection to
// a name is refused (the agent gets ECONNREFUSED), taped as a net.conn
// with refused set and the name, and the run says so.
func TestHermeticRefusesPlainTCP(t *testing.T) {
	t.Parallel()
	asRootAndNobody(t, func(t *testing.T, nobody bool) {
		out, frames := netRecord(t, nobody, []string{"--hermetic"}, "5432")
		if !strings.Contains(out, "5432 refused 111") {
			t.Fatalf("agent output:\n%s", out)
		}
		if len(frames) != 1 || frames[0]["kind"] != "net.conn" || frames[0]["refused"] != true ||
			frames[0]["host"] != "api.example.test" || frames[0]["proto"] != "tcp" {
			t.Fatalf("frames %v, want one refused net.conn naming api.example.test\n%s", frames, out)
		}
		if !strings.Contains(out, "--hermetic refused") || !strings.Contains(out, "api.example.test:5432") {
			t.Errorf("the run does not say what --hermetic refused:\n%s", out)
		}
	})
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode()&0o001 != 0
}
