package nsinit

import (
	"net"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestSocketPaths(t *testing.T) {
	for _, c := range []struct {
		name, v string
		want    []string
	}{
		{"SSH_AUTH_SOCK", "/home/u/.ssh/agent.sock", []string{"/home/u/.ssh/agent.sock"}},
		{"SSH_AUTH_SOCK", "relative.sock", nil},
		{"DOCKER_HOST", "unix:///var/run/docker.sock", []string{"/var/run/docker.sock"}},
		{"DOCKER_HOST", "tcp://10.0.0.1:2375", nil},
		{"DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/1000/bus,guid=abc;unix:abstract=/tmp/dbus-x", []string{"/run/user/1000/bus"}},
		{"PULSE_SERVER", "unix:/run/user/1000/pulse/native tcp:host", []string{"/run/user/1000/pulse/native"}},
		{"GPG_AGENT_INFO", "/home/u/.gnupg/S.gpg-agent:0:1", []string{"/home/u/.gnupg/S.gpg-agent"}},
		{"WAYLAND_DISPLAY", "wayland-0", nil},
		{"SSH_AUTH_SOCK", "", nil},
	} {
		if got := socketPaths(c.name, c.v); !reflect.DeepEqual(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("socketPaths(%s=%q) = %q, want %q", c.name, c.v, got, c.want)
		}
	}
}

func TestFindHostSockets(t *testing.T) {
	base, err := os.MkdirTemp("/var/tmp", "jukebox-sockets-") // not under the private /tmp
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	listen := func(p string) {
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		ln, err := net.Listen("unix", p)
		must(t, err)
		t.Cleanup(func() { ln.Close() })
	}
	runtime, home := filepath.Join(base, "runtime"), filepath.Join(base, "home")
	listen(filepath.Join(runtime, "bus"))
	listen(filepath.Join(home, ".gnupg", "S.gpg-agent"))
	listen(filepath.Join(base, "ssh", "agent.sock"))
	must(t, os.WriteFile(filepath.Join(base, "not-a-socket"), []byte("x"), 0o644))
	env := map[string]string{"XDG_RUNTIME_DIR": runtime, "SSH_AUTH_SOCK": filepath.Join(base, "ssh", "agent.sock"),
		"DOCKER_HOST": "unix://" + filepath.Join(base, "not-a-socket")}

	h := findHostSockets(func(k string) string { return env[k] }, home, []string{filepath.Join(base, "ws")})
	if !contains(h.Dirs, runtime) {
		t.Errorf("XDG_RUNTIME_DIR %s not hidden: %+v", runtime, h)
	}
	for _, f := range []string{filepath.Join(base, "ssh", "agent.sock"), filepath.Join(home, ".gnupg", "S.gpg-agent")} {
		if !contains(h.Files, f) {
			t.Errorf("socket %s not covered: %+v", f, h)
		}
	}
	if contains(h.Files, filepath.Join(base, "not-a-socket")) {
		t.Errorf("a file that is not a socket is covered: %+v", h)
	}
	for _, d := range runDirs {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() && !contains(h.Dirs, d) {
			t.Errorf("%s not hidden: %+v", d, h)
		}
	}

	// A runtime folder that is or holds a path the agent must see is not
	// hidden; its sockets are covered one by one.
	env["SSH_AUTH_SOCK"] = filepath.Join(runtime, "bus")
	for _, kept := range []string{runtime, filepath.Join(runtime, "ws")} {
		h = findHostSockets(func(k string) string { return env[k] }, home, []string{kept})
		if contains(h.Dirs, runtime) || !contains(h.Files, filepath.Join(runtime, "bus")) {
			t.Errorf("kept %s: runtime folder hidden or its socket not covered: %+v", kept, h)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
