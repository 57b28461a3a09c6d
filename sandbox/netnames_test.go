//go:build linux

package sandbox

import (
	"bytes"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// namesAgent resolves names through the booth's resolver, then talks to
// api.example.test on 443 (directly, not through a proxy) and on 7.
const namesAgent = `import socket
print("localhost", socket.gethostbyname("svc.localhost"))
a = socket.gethostbyname("api.example.test")
print("same", a == socket.gethostbyname("API.example.test."), a != socket.gethostbyname("db.example.test"))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.connect((a, 5353)); print("udp connected")
except OSError as e:
    print("udp refused", e.errno)
for port in (443, 7):
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect((a, port)); s.sendall(b"ping"); s.shutdown(socket.SHUT_WR)
        print(port, "answered", s.recv(100).decode())
    except OSError as e:
        print(port, "refused", e.errno)
`

// TestNetNoneNames: under NetNone the booth's resolver answers each name
// with an address of its own, the same for the same name; a connection
// to a name on 443, or from a datagram socket, is refused with the name,
// and one on another port is
// carried (Carry hears the name and port), or, with no Carry, refused and
// reported as Hermetic.
func TestNetNoneNames(t *testing.T) {
	requireOverlay(t)
	for _, carry := range []bool{true, false} {
		ws := t.TempDir()
		tx, err := Begin(ws, Options{})
		must(t, err)
		defer tx.Rollback(ctx)
		var mu sync.Mutex
		var heard []string
		hear := func(s string) {
			mu.Lock()
			defer mu.Unlock()
			heard = append(heard, s)
		}
		o := ExecOptions{Args: []string{"python3", "-c", namesAgent}, Notice: io.Discard, Env: os.Environ(), Net: NetNone,
			OnNetRefused: func(r NetRefusal) {
				hear(r.Host + " " + r.Addr[strings.LastIndex(r.Addr, ":"):] + " " + r.Errno + map[bool]string{true: " hermetic"}[r.Hermetic] +
					map[bool]string{true: " udp"}[r.UDP])
			}}
		if carry {
			o.Carry = func(c CarriedConn) {
				defer c.Conn.Close()
				b, _ := io.ReadAll(c.Conn)
				hear("carried " + c.Host + " " + string(b))
				io.WriteString(c.Conn, "pong")
			}
		}
		var out bytes.Buffer
		o.Stdout, o.Stderr = &out, &out
		res, err := Exec(ctx, tx, o)
		must(t, err)
		want := "localhost 127.0.0.1\nsame True True\nudp refused 111\n443 refused 111\n"
		wantHeard := "api.example.test :5353 ECONNREFUSED udp\napi.example.test :443 ECONNREFUSED\n"
		if carry {
			want += "7 answered pong\n"
			wantHeard += "carried api.example.test ping\n"
		} else {
			want += "7 refused 111\n"
			wantHeard += "api.example.test :7 ECONNREFUSED hermetic\n"
		}
		// Refusals and carried connections are heard on goroutines of
		// their own: their order is not the agent's.
		mu.Lock()
		slices.Sort(heard)
		got := strings.Join(heard, "\n") + "\n"
		mu.Unlock()
		wantLines := strings.Split(strings.TrimSuffix(wantHeard, "\n"), "\n")
		slices.Sort(wantLines)
		wantHeard = strings.Join(wantLines, "\n") + "\n"
		if res.ExitCode != 0 || out.String() != want || got != wantHeard {
			t.Errorf("carry %v: exit %d, output:\n%s\nwant:\n%s\nheard:\n%swant:\n%s", carry, res.ExitCode, out.String(), want, got, wantHeard)
		}
	}
}
