package nsinit

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestTmpWalkHidesSockets: the walk of the host's /tmp (here a folder
// standing for it) finds each socket and chooses what to cover: a folder
// holding one whole, sockets in /tmp itself and in a folder holding a
// path the booth mounts one by one; paths longer than PATH_MAX are walked
// and covered too (a parallel test's deep folder made the booth refuse to
// start: "file name too long").
func TestTmpWalkHidesSockets(t *testing.T) {
	lower, upper := t.TempDir(), t.TempDir()
	root := openDir(t, lower)
	defer unix.Close(root)
	long := strings.Repeat("d", 200)
	deep := []string{"deep"}
	for range 25 { // 25 × 201 bytes: over PATH_MAX
		deep = append(deep, long)
	}
	mkdirs(t, root, deep)
	mksock(t, root, append(deep, "s"))
	mkdirs(t, root, []string{"tmux-0"})
	mksock(t, root, []string{"tmux-0", "default"})
	mksock(t, root, []string{".s.PGSQL.5432"})
	mkdirs(t, root, []string{"base", "ws"})
	mksock(t, root, []string{"base", "agent.sock"})
	mksock(t, root, []string{"base", "ws", "inside.sock"}) // under the workspace's own mount
	mkdirs(t, root, []string{"plain"})
	w := tmpWalk{mounted: []string{"base/ws"}}
	top, err := unix.Openat(root, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	must(t, w.walk(top, ".", 0))
	want := map[string]bool{strings.Join(deep, "/"): true, "tmux-0": true, ".s.PGSQL.5432": true, "base/agent.sock": true}
	if len(w.hide) != len(want) {
		t.Fatalf("hide %q, want %d paths", w.hide, len(want))
	}
	up := openDir(t, upper)
	defer unix.Close(up)
	for _, p := range w.hide {
		if !want[p] {
			t.Errorf("hides %s", p)
		}
		comps := strings.Split(p, "/")
		must(t, whiteout(root, up, comps))
		if !isWhiteoutAt(t, up, comps) {
			t.Errorf("no whiteout at %s", p[:min(len(p), 60)])
		}
	}
}

func openDir(t *testing.T, p string) int {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	return fd
}

// at opens the folder comps below fd, one name at a time.
func at(t *testing.T, fd int, comps []string) int {
	fd, err := unix.Dup(fd)
	must(t, err)
	for _, c := range comps {
		next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		must(t, err)
		fd = next
	}
	return fd
}

func mkdirs(t *testing.T, root int, comps []string) {
	for i := range comps {
		d := at(t, root, comps[:i])
		if err := unix.Mkdirat(d, comps[i], 0o755); err != nil && err != unix.EEXIST {
			t.Fatal(err)
		}
		unix.Close(d)
	}
}

func mksock(t *testing.T, root int, comps []string) {
	d := at(t, root, comps[:len(comps)-1])
	defer unix.Close(d)
	must(t, unix.Mknodat(d, comps[len(comps)-1], unix.S_IFSOCK|0o777, 0))
}

func isWhiteoutAt(t *testing.T, root int, comps []string) bool {
	d := at(t, root, comps[:len(comps)-1])
	defer unix.Close(d)
	var st unix.Stat_t
	return unix.Fstatat(d, comps[len(comps)-1], &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
}
