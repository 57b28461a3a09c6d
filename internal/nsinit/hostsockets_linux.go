package nsinit

import (
	"os"
	"path/filepath"
	"strings"
)

// Unix sockets with a path are reachable whatever the network namespace:
// a socket of the Docker daemon, D-Bus, an ssh or gpg agent or a desktop
// session is a way out of the booth (a container started through Docker
// writes anywhere; the ssh agent signs as the user). The booth hides
// where they live, under --net host as under --net none:
//
//   - /run and /var/run, as empty read-only folders (the system's
//     sockets: Docker, D-Bus, systemd, and $XDG_RUNTIME_DIR below /run),
//     keeping the file /etc/resolv.conf points to when it lies there, so
//     names still resolve under --net host;
//   - $XDG_RUNTIME_DIR wherever it is;
//   - each socket named by the environment (SSH_AUTH_SOCK, DOCKER_HOST,
//     the D-Bus addresses, PULSE_SERVER, an absolute WAYLAND_DISPLAY,
//     GPG_AGENT_INFO), and gpg's and Docker Desktop's sockets in $HOME,
//     each covered by a device that refuses connections.
//
// The sockets in the host's /tmp (X11's, tmux's, ssh's, a database
// server's) are unreachable from the booth's /tmp (unixconnect_linux.go). Abstract unix
// sockets (a name, no file) belong to the network namespace: under
// --net host they stay reachable, under --net none they are the booth's
// own. hostSockets is the list; confine mounts it.
type hostSockets struct {
	Dirs  []string // each covered by an empty tmpfs, read-only once populated
	Files []string // each covered by a null device
	Keep  []string // files inside Dirs that stay visible, read-only
}

// runDirs are the system's socket folders.
var runDirs = []string{"/run", "/var/run"}

// findHostSockets lists what to hide, given the command's environment
// (getenv), $HOME, and the paths that must stay visible (the workspace,
// the tape, --allow-write-live folders): $XDG_RUNTIME_DIR is not hidden
// when it is or holds one of those; its sockets named by the environment
// are covered instead. (/run is hidden whatever it holds: kept paths
// below it get mount points in its tmpfs.)
func findHostSockets(getenv func(string) string, home string, kept []string) hostSockets {
	var h hostSockets
	holdsKept := func(dir string) bool {
		for _, k := range kept {
			if Within(k, dir) {
				return true
			}
		}
		return false
	}
	for _, d := range runDirs {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
			h.Dirs = append(h.Dirs, d) // kept paths below get mount points
		}
	}
	if real, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && h.hidden(real) {
		h.Keep = append(h.Keep, real)
	}
	if rt := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(rt) && !h.hidden(rt) && !holdsKept(rt) && !isPrivate(rt) {
		if fi, err := os.Lstat(rt); err == nil && fi.IsDir() {
			h.Dirs = append(h.Dirs, filepath.Clean(rt))
		}
	}
	var named []string
	for _, v := range []string{"SSH_AUTH_SOCK", "PULSE_SERVER", "DOCKER_HOST",
		"DBUS_SESSION_BUS_ADDRESS", "DBUS_SYSTEM_BUS_ADDRESS", "WAYLAND_DISPLAY", "GPG_AGENT_INFO"} {
		named = append(named, socketPaths(v, getenv(v))...)
	}
	if home != "" {
		for _, pat := range []string{".gnupg/S.*", ".docker/run/*.sock", ".colima/*/docker.sock"} {
			m, _ := filepath.Glob(filepath.Join(home, pat))
			named = append(named, m...)
		}
	}
	seen := map[string]bool{}
	for _, p := range named {
		p = filepath.Clean(p)
		if seen[p] || h.hidden(p) || isPrivate(p) {
			continue
		}
		seen[p] = true
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
			h.Files = append(h.Files, p)
		}
	}
	return h
}

// hidden reports whether p lies in a folder h hides.
func (h hostSockets) hidden(p string) bool {
	for _, d := range h.Dirs {
		if Within(p, d) {
			return true
		}
	}
	return false
}

// isPrivate reports whether p lies in the booth's private /dev/shm, or in
// its /tmp, whose host sockets the command cannot reach.
func isPrivate(p string) bool { return Within(p, "/tmp") || Within(p, "/dev/shm") }

// socketPaths reads the socket paths out of one environment variable's
// value, in that variable's own syntax.
func socketPaths(name, v string) []string {
	if v == "" {
		return nil
	}
	var out []string
	switch name {
	case "DBUS_SESSION_BUS_ADDRESS", "DBUS_SYSTEM_BUS_ADDRESS":
		// unix:path=/run/user/1000/bus,guid=...;unix:abstract=...
		for _, addr := range strings.Split(v, ";") {
			_, kvs, ok := strings.Cut(addr, ":")
			if !ok {
				continue
			}
			for _, kv := range strings.Split(kvs, ",") {
				if k, p, _ := strings.Cut(kv, "="); k == "path" {
					out = append(out, p)
				}
			}
		}
	case "DOCKER_HOST":
		if p, ok := strings.CutPrefix(v, "unix://"); ok {
			out = append(out, p)
		}
	case "PULSE_SERVER":
		for _, s := range strings.Fields(v) {
			out = append(out, strings.TrimPrefix(s, "unix:"))
		}
	case "GPG_AGENT_INFO":
		p, _, _ := strings.Cut(v, ":")
		out = append(out, p)
	default:
		out = append(out, v)
	}
	abs := out[:0]
	for _, p := range out {
		if filepath.IsAbs(p) {
			abs = append(abs, p)
		}
	}
	return abs
}
