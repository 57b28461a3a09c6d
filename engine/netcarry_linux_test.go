//go:build linux

package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/syncio"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// netEchoEnv, set in a child of TestNetNoneCarriesTCP, makes the test
// binary record echoAgent as the child's user: its value is the
// workspace, the tape, the echo server's address and the Python to run,
// joined by newlines. The child prints what echoRun returns, as JSON.
const netEchoEnv = "JUKEBOX_TEST_NETECHO"

// echoAgent resolves echo.example.test in the booth, sends "ping" to it
// on port 7, and prints the answer.
const echoAgent = `import socket
s = socket.socket(); s.settimeout(10)
s.connect((socket.gethostbyname("echo.example.test"), 7))
s.sendall(b"ping"); s.shutdown(socket.SHUT_WR)
print("answer", s.recv(100).decode())
`

// lockedBuffer is a bytes.Buffer for more than one writer: the booth's
// notice (written by the run) and the agent's output (written by the
// copying goroutines) share one in these tests.
type lockedBuffer = syncio.Buffer

// echoResult is what a child run of echoAgent reports.
type echoResult struct {
	Out      string
	Err      string
	NetConns int
}

// echoRun records echoAgent under --booth --net none, its echo.example.test:7
// dialled at echo.
func echoRun(ws, tape, echo, py string) echoResult {
	var out lockedBuffer
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr != "echo.example.test:7" {
			return nil, fmt.Errorf("no route to %s in this test", addr)
		}
		return (&net.Dialer{}).DialContext(ctx, network, echo)
	}
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: []string{py, "-c", echoAgent}, Dir: ws, Stdout: &out, Stderr: &out,
			Booth: &engine.BoothOptions{Commit: engine.CommitNever, Net: sandbox.NetNone, Notice: &out, Dial: dial}},
		Tape: tape})
	r := echoResult{Out: out.String()}
	if err != nil {
		r.Err = err.Error()
	}
	if res != nil {
		r.NetConns = res.NetConns
	}
	return r
}

// netEchoChild is the child side of TestNetNoneCarriesTCP; TestMain calls
// it, and it returns at once in any other process.
func netEchoChild() {
	v := strings.Split(os.Getenv(netEchoEnv), "\n")
	if len(v) != 4 {
		return
	}
	os.Setenv("HOME", filepath.Dir(v[1]))
	json.NewEncoder(os.Stdout).Encode(echoRun(v[0], v[1], v[2], v[3]))
	os.Exit(0)
}

// echoServer answers each connection with what it read, upper-cased,
// once the client has sent all; got counts the bytes it read, when set.
func echoServer(t *testing.T, got ...*atomic.Int64) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, _ := io.ReadAll(c)
			for _, g := range got {
				g.Add(int64(len(b)))
			}
			c.Write(bytes.ToUpper(b))
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// TestNetNoneCarriesTCP: under --booth --net none, recording, the agent's
// plain TCP to a name (echo.example.test:7) is carried to the host and
// taped as a net.conn frame naming it, with the bytes each way and their
// timing; as root and as the user nobody.
func TestNetNoneCarriesTCP(t *testing.T) {
	if caps := sandbox.Probe(context.Background(), t.TempDir()); !caps.Overlay {
		testenv.Unavailable(t, "the kernel overlay booth", "run on Linux with unprivileged user namespaces allowed")
	}
	echo := echoServer(t)
	t.Run("root", func(t *testing.T) {
		py := testenv.RequirePython(t)
		tape := filepath.Join(t.TempDir(), "echo.jbx")
		checkEcho(t, echoRun(t.TempDir(), tape, echo, py), tape, echo)
	})
	t.Run("nobody", func(t *testing.T) {
		if os.Getuid() != 0 {
			testenv.Unavailable(t, "root, to run the booth as the user nobody", "run the tests as root")
		}
		if fi, err := os.Stat("/usr/bin/python3"); err != nil || fi.Mode()&0o001 == 0 {
			testenv.Unavailable(t, "/usr/bin/python3, for the user nobody", "install python3")
		}
		base := t.TempDir()
		ws, state := filepath.Join(base, "ws"), filepath.Join(base, "state")
		bin := filepath.Join(base, "engine.test")
		testenv.SelfAt(t, bin)
		for _, err := range []error{os.Chmod(filepath.Dir(base), 0o755), os.Chmod(base, 0o755),
			os.Mkdir(ws, 0o755), os.Mkdir(state, 0o700), os.Chown(ws, 65534, 65534), os.Chown(state, 65534, 65534)} {
			if err != nil {
				t.Fatal(err)
			}
		}
		tape := filepath.Join(state, "echo.jbx")
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), netEchoEnv+"="+strings.Join([]string{ws, tape, echo, "/usr/bin/python3"}, "\n"), "XDG_STATE_HOME="+state)
		cmd.Dir = ws
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.Output()
		var r echoResult
		if err != nil || json.Unmarshal(out, &r) != nil {
			t.Fatalf("as nobody: %v\n%s", err, out)
		}
		checkEcho(t, r, tape, echo)
	})
}

func checkEcho(t *testing.T, r echoResult, tape, echo string) {
	t.Helper()
	if r.Err != "" || !strings.Contains(r.Out, "answer PING") || r.NetConns != 1 {
		t.Fatalf("record: %s, %d carried\n%s", r.Err, r.NetConns, r.Out)
	}
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	var conns []tapefmt.NetConn
	for f, err := range tp.Frames(tapefmt.KindNetConn, tapefmt.KindNetRefused) {
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.Decode()
		if err != nil {
			t.Fatal(err)
		}
		c, ok := p.(*tapefmt.NetConn)
		if !ok {
			t.Fatalf("a refusal on the tape: %+v", p)
		}
		conns = append(conns, *c)
	}
	if len(conns) != 1 {
		t.Fatalf("net.conn frames: %+v", conns)
	}
	c := conns[0]
	up, uerr := tp.Blob(c.Up)
	down, derr := tp.Blob(c.Down)
	if c.Proto != "tcp" || c.Host != "echo.example.test" || c.Addr != echo || c.Refused || c.Error != "" ||
		string(up) != "ping" || string(down) != "PING" || uerr != nil || derr != nil ||
		c.UpSize != 4 || c.DownSize != 4 || len(c.UpChunks) == 0 || len(c.DownChunks) == 0 {
		t.Errorf("net.conn %+v; up %q (%v), down %q (%v)", c, up, uerr, down, derr)
	}
}

// directHTTPAgent speaks HTTP to echo.example.test:7 past the proxy:
// a plain request, then a TLS handshake offering http/1.1.
const directHTTPAgent = `import socket, ssl
a = socket.gethostbyname("echo.example.test")
s = socket.create_connection((a, 7), timeout=10)
try:
    s.sendall(b"GET / HTTP/1.1\r\nHost: echo.example.test\r\n\r\n"); s.shutdown(socket.SHUT_WR)
    print("http", repr(s.recv(100)))
except OSError as e:
    print("http cut", e.errno)
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
ctx.set_alpn_protocols(["http/1.1"])
try:
    ctx.wrap_socket(socket.create_connection((a, 7), timeout=10), server_hostname="echo.example.test"); print("tls done")
except (OSError, ssl.SSLError) as e:
    print("tls cut", type(e).__name__)
`

// TestNetNoneCutsDirectHTTP: HTTP past the proxy to a port the booth
// carries (a plain request, a TLS handshake offering http/1.1) is cut
// before a byte reaches the host, and taped as net.refused frames naming
// it.
func TestNetNoneCutsDirectHTTP(t *testing.T) {
	if caps := sandbox.Probe(context.Background(), t.TempDir()); !caps.Overlay {
		testenv.Unavailable(t, "the kernel overlay booth", "run on Linux with unprivileged user namespaces allowed")
	}
	py := testenv.RequirePython(t)
	var got atomic.Int64
	echo := echoServer(t, &got)
	tape := filepath.Join(t.TempDir(), "cut.jbx")
	var out lockedBuffer
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, echo)
	}
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: []string{py, "-c", directHTTPAgent}, Dir: t.TempDir(), Stdout: &out, Stderr: &out,
			Booth: &engine.BoothOptions{Commit: engine.CommitNever, Net: sandbox.NetNone, Notice: &out, Dial: dial}},
		Tape: tape})
	if err != nil || !strings.Contains(out.String(), "http b''") && !strings.Contains(out.String(), "http cut") ||
		!strings.Contains(out.String(), "tls cut") || got.Load() != 0 || res.NetConns != 0 || res.NetRefused != 2 {
		t.Fatalf("record: %v, %d bytes reached the host, result %+v\n%s", err, got.Load(), res, out.String())
	}
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	var refused []string
	for f, err := range tp.Frames(tapefmt.KindNetConn, tapefmt.KindNetRefused) {
		if err != nil {
			t.Fatal(err)
		}
		p, _ := f.Decode()
		r, ok := p.(*tapefmt.NetRefused)
		if !ok {
			t.Fatalf("%+v on the tape", p)
		}
		refused = append(refused, r.Host+" "+r.Addr+" "+r.Errno)
	}
	want := "echo.example.test echo.example.test:7 ECONNRESET"
	if len(refused) != 2 || refused[0] != want || refused[1] != want {
		t.Errorf("net.refused frames %q, want twice %q", refused, want)
	}
}

// ownLoopbackAgent asks the booth's resolver for names that are this
// machine's own (127.0.0.1 and 0.0.0.0 asked as names) and
// connects to the port where a host service listens on loopback.
const ownLoopbackAgent = `import socket, struct, sys
def dns(name):
    hdr = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
    qn = b"".join(bytes([len(l)]) + l for l in name.split(b".") if l) + b"\x00"
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(5)
    u.sendto(hdr + qn + struct.pack(">HH", 1, 1), ("127.0.0.53", 53))
    return socket.inet_ntoa(u.recv(512)[-4:])
for name in [b"127.0.0.1", b"0.0.0.0"]:
    s = socket.create_connection((dns(name), int(sys.argv[1])), timeout=5)
    s.sendall(b"ping"); s.shutdown(socket.SHUT_WR); s.settimeout(5)
    print(name.decode(), s.recv(100))
`

// TestNetNoneKeepsTheHostsLoopback: under --net none the booth's loopback
// is its own, but a name its resolver answered for the host's own address
// (127.0.0.1 asked as a name) was carried to the host's 127.0.0.1: a
// hostile agent reached the host's PostgreSQL as its superuser. The
// carrier refuses this machine's own addresses, as the proxy does.
func TestNetNoneKeepsTheHostsLoopback(t *testing.T) {
	if caps := sandbox.Probe(context.Background(), t.TempDir()); !caps.Overlay {
		testenv.Unavailable(t, "the kernel overlay booth", "run on Linux with unprivileged user namespaces allowed")
	}
	py := testenv.RequirePython(t)
	var got atomic.Int64
	_, port, _ := net.SplitHostPort(echoServer(t, &got))
	tape := filepath.Join(t.TempDir(), "own.jbx")
	var out lockedBuffer
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: []string{py, "-c", ownLoopbackAgent, port}, Dir: t.TempDir(), Stdout: &out, Stderr: &out,
			Booth: &engine.BoothOptions{Commit: engine.CommitNever, Net: sandbox.NetNone, Notice: &out}},
		Tape: tape})
	if err != nil || got.Load() != 0 || strings.Contains(out.String(), "PING") {
		t.Fatalf("record: %v; %d bytes reached the host's loopback service\n%s", err, got.Load(), out.String())
	}
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	n := 0
	for f, err := range tp.Frames(tapefmt.KindNetConn) {
		if err != nil {
			t.Fatal(err)
		}
		p, _ := f.Decode()
		if c := p.(*tapefmt.NetConn); !strings.Contains(c.Error, "own address") {
			t.Errorf("net.conn %+v: want the dial refused as this machine's own address", c)
		}
		n++
	}
	if n == 0 || res == nil {
		t.Errorf("no net.conn frame on the tape (%d)\n%s", n, out.String())
	}
}

// TestNetNoneHoldsForTheControlShell: a --net none booth run's agent ran
// commands through the control API's shell (POST /v1/tx/ID/shell), which
// jukebox runs: in the host's network, where the host's loopback
// services answered (past --hermetic too). They get the booth's network
// now: loopback alone.
func TestNetNoneHoldsForTheControlShell(t *testing.T) {
	if caps := sandbox.Probe(context.Background(), t.TempDir()); !caps.Overlay {
		testenv.Unavailable(t, "the kernel overlay booth", "run on Linux with unprivileged user namespaces allowed")
	}
	py := testenv.RequirePython(t)
	var got atomic.Int64
	_, port, _ := net.SplitHostPort(echoServer(t, &got))
	probe := py + ` -c "import socket; s = socket.create_connection(('127.0.0.1', ` + port + `), timeout=5); s.sendall(b'ping'); print('CONNECTED')"`
	agent := controlCall + `tx = call("tx", {})["tx"]
print(call("tx/%s/shell" % tx, {"command": sys.argv[1]}))
`
	var out lockedBuffer
	_, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: []string{py, "-c", agent, probe}, Dir: t.TempDir(), Env: cleanEnv(), Stdout: &out, Stderr: &out,
			Booth: &engine.BoothOptions{Commit: engine.CommitNever, Net: sandbox.NetNone, Notice: &out}},
		Tape: filepath.Join(t.TempDir(), "shell.jbx")})
	if err != nil || got.Load() != 0 || strings.Contains(out.String(), "'CONNECTED") || !strings.Contains(out.String(), "'exit_code': 1") {
		t.Fatalf("record: %v; %d bytes reached the host's loopback service\n%s", err, got.Load(), out.String())
	}
}

// TestReplayNeverCarriesTCP: replay is closed-world; under --booth --net
// none the plain TCP a recording carried is refused, never dialled, and
// the replay's tape holds a net.conn with refused set naming the host.
func TestReplayNeverCarriesTCP(t *testing.T) {
	if caps := sandbox.Probe(context.Background(), t.TempDir()); !caps.Overlay {
		testenv.Unavailable(t, "the kernel overlay booth", "run on Linux with unprivileged user namespaces allowed")
	}
	py := testenv.RequirePython(t)
	var got atomic.Int64
	echo := echoServer(t, &got)
	ws, recorded, replayed := t.TempDir(), filepath.Join(t.TempDir(), "rec.jbx"), filepath.Join(t.TempDir(), "rep.jbx")
	checkEcho(t, echoRun(ws, recorded, echo, py), recorded, echo)
	var dialled atomic.Int64
	dial := func(context.Context, string, string) (net.Conn, error) {
		dialled.Add(1)
		return nil, fmt.Errorf("dialled")
	}
	var out lockedBuffer
	_, err := engine.Replay(context.Background(), engine.ReplayOptions{From: recorded, Tape: replayed,
		RunOptions: engine.RunOptions{Dir: ws, Stdout: &out, Stderr: &out,
			Booth: &engine.BoothOptions{Commit: engine.CommitNever, Net: sandbox.NetNone, Notice: &out, Dial: dial}}})
	if dialled.Load() != 0 || got.Load() != 4 || strings.Contains(out.String(), "answer PING") {
		t.Fatalf("replay: %v; dialled %d, the host read %d bytes (4 when recorded)\n%s", err, dialled.Load(), got.Load(), out.String())
	}
	tp, err := tapefmt.Open(replayed)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	var conns []string
	for f, err := range tp.Frames(tapefmt.KindNetConn) {
		if err != nil {
			t.Fatal(err)
		}
		p, _ := f.Decode()
		c := p.(*tapefmt.NetConn)
		conns = append(conns, fmt.Sprintf("%s %s refused=%v", c.Proto, c.Host, c.Refused))
	}
	if len(conns) != 1 || conns[0] != "tcp echo.example.test refused=true" {
		t.Errorf("replay's net.conn frames: %q", conns)
	}
}
