package nsinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// runInit is the booth's namespace init, PID 1 of its PID namespace: it
// builds the confined mount tree, starts the command without the init's
// capabilities and reaps until the command ends. A failure before the
// command runs is reported on descriptor 3; how the command ended (a
// signal) on descriptor 4; connections refused under --net none on
// descriptor 5.
func run(raw string) int {
	report := os.NewFile(3, "booth-report")
	status := os.NewFile(4, "booth-status")
	events := os.NewFile(5, "booth-events")
	// No descriptor but the standard streams reaches the command: not
	// these three, nor those jukebox inherited from its own parent without
	// close-on-exec (Go opens every other with it).
	unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	var s Spec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		fmt.Fprintf(report, "setup: bad spec: %v", err)
		return SetupFailed
	}
	if s.Build != Fingerprint() {
		fmt.Fprint(report, "setup: this init was built from other source than jukebox")
		return Mismatch
	}
	nb, err := confine(s)
	if err != nil {
		fmt.Fprintf(report, "setup: %v", err)
		return SetupFailed
	}
	if nb != nil {
		nb.serve()
	}
	// Nothing in the booth may trace or read this process: it holds
	// capabilities over the mounts the command must not undo.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(report, "setup: not dumpable: %v", err)
		return SetupFailed
	}
	// Every signal is caught: as PID 1 of its namespace, the init gets from
	// the command only the signals it has a handler for, and Go's default
	// handlers would end it (and with it the run) on SIGABRT, SIGSEGV, ...
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs)
	pid, listener, msg := startCommand(s)
	if msg != "" {
		fmt.Fprint(report, msg)
		if strings.HasPrefix(msg, "setup: ") {
			return SetupFailed
		}
		return ExecFailed
	}
	report.Close()
	if s.Probe {
		return 0
	}
	if listener >= 0 {
		go superviseConnect(listener, nb, commandCaps(s), events)
	}
	code, sig := reap(pid, sigs)
	if sig != 0 {
		fmt.Fprintf(status, "signal %d", sig)
	}
	// Returning ends PID 1: the kernel kills what is left of the tree and
	// reaps it before our parent sees this exit.
	return code
}

// forwarded are the signals stage 1 passes to the command: those jukebox
// forwards (the booth runs in a session of its own, so Ctrl-C and Ctrl-\
// from the terminal reach jukebox, which passes them on) and those a
// terminal or a job controller sends. The rest are dropped. Those a
// terminal sends to its foreground job (true) go to the command's whole
// process group, as Ctrl-C would: an agent's interpreter and the tools it
// runs hear it, not the shell that started them alone. The others go to
// the command alone, as kill sends them.
var forwarded = map[os.Signal]bool{syscall.SIGTERM: false, syscall.SIGHUP: true, syscall.SIGUSR1: false,
	syscall.SIGUSR2: false, syscall.SIGINT: true, syscall.SIGQUIT: true, syscall.SIGWINCH: true, syscall.SIGCONT: true}

// reap waits for the command, reaping every orphan the PID namespace
// hands to PID 1 meanwhile, and forwards signals to the command. It
// returns the command's exit code and, if a signal ended it, the signal.
func reap(pid int, sigs <-chan os.Signal) (int, syscall.Signal) {
	go func() {
		for s := range sigs {
			group, ok := forwarded[s]
			// A command that left its group (setpgid, setsid) still
			// hears the signal itself.
			if ok && (!group || syscall.Kill(-pid, s.(syscall.Signal)) != nil) {
				syscall.Kill(pid, s.(syscall.Signal))
			}
		}
	}()
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return ExecFailed, 0
		}
		if got != pid {
			continue
		}
		switch {
		case ws.Exited():
			return ws.ExitStatus(), 0
		case ws.Signaled():
			return 128 + int(ws.Signal()), ws.Signal()
		}
	}
}

// startCommand starts the command from a thread of its own, which first
// gives up what the init holds over the booth: it sets no_new_privs,
// drops every capability the command may not have (see rootKeeps), loads
// the seccomp filter, then forks and execs the command, which inherits
// all three from that thread. The thread ends with its goroutine, never
// unlocked, so no other goroutine of the init runs without its
// capabilities (and Go starts new threads from a clean one). With
// s.Probe it stops before the fork. listener is the seccomp notification
// descriptor (-1 when msg is set); msg, when not empty, is the
// failure for jukebox, "setup: ..." or "exec: ...".
//
// The command runs in the init's namespaces as the caller's uid. It needs
// no namespace of its own: without capabilities it cannot undo a mount,
// and the init is not dumpable, so it cannot be traced or read.
func startCommand(s Spec) (pid, listener int, msg string) {
	var bin string
	if !s.Probe {
		if err := os.Chdir(s.Dir); err != nil {
			return 0, -1, fmt.Sprintf("exec: chdir %s: %v", strconv.Quote(s.Dir), err)
		}
		var err error
		if bin, err = exec.LookPath(s.Args[0]); err != nil {
			return 0, -1, execFailure(s.Args[0], "", err)
		}
	}
	keep := commandCaps(s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread ends here
		listener = -1
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			msg = fmt.Sprintf("setup: no_new_privs: %v", err)
			return
		}
		if err := dropCaps(keep); err != nil {
			msg = fmt.Sprintf("setup: %v", err)
			return
		}
		fd, err := loadSeccomp()
		if err != nil {
			msg = fmt.Sprintf("setup: seccomp: %v", err)
			return
		}
		listener = fd
		if s.Probe {
			return
		}
		// The command leads a process group of its own, which the
		// terminal's signals reach through reap.
		pid, err = syscall.ForkExec(bin, s.Args, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2},
			Sys: &syscall.SysProcAttr{Setpgid: true}})
		if err != nil {
			msg = execFailure(s.Args[0], bin, err)
		}
	}()
	<-done
	return pid, listener, msg
}

// commandCaps are the capabilities the command keeps: rootKeeps when
// root runs the booth, else none.
func commandCaps(s Spec) []int {
	if s.UID == 0 {
		return rootKeeps
	}
	return nil
}

// A detached mount, made before the tree is set read-only and attached
// after, at Path.
type detached struct {
	fd   int
	path string
	what string
	file bool // mounted on a file (a device node), not a folder
	rank int  // at the same path, the higher rank is attached last and wins
	seal bool // made read-only once what lies below it is attached
}

// Ranks of detached mounts: what hides or replaces a host folder wins over
// a path asked to stay visible at the same place.
const (
	rankKept    = iota // the tape, --allow-write-live folders, resolv.conf
	rankOverlay        // the workspace
	rankPrivate        // hides, private /tmp, /dev/shm and /dev
)

// confine builds the booth's mount tree, in this order:
//
//  1. every mount private, so nothing here propagates to the host;
//  2. detached mounts: the overlay over the workspace, a read-only tmpfs
//     hiding the booth's state, an overlay over the host's /tmp whose
//     sockets the command cannot reach (privateTmp), a tmpfs for /dev/shm, empty folders
//     over the host's socket folders (hostsockets.go), and clones of the
//     paths that must stay visible (read-only, or writable for WriteLive);
//  3. the whole tree read-only, without devices or setuid (mount_setattr,
//     recursive);
//  4. a /proc for the new PID namespace, its kernel settings read-only;
//  5. the detached mounts moved into place, shallowest first, creating
//     their mount points inside the private /tmp where needed.
//
// The network of --net none (startNet) is made before anything is
// hidden, since the sockets of its relays live in the booth's state; the
// booth's resolv.conf is mounted over the host's.
func confine(s Spec) (*netBooth, error) {
	if err := CheckKept(s); err != nil {
		return nil, err
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, fmt.Errorf("make mounts private: %w", err)
	}
	ovl, err := overlayMount(s.Lower, s.Upper, s.Work)
	if err != nil {
		return nil, err
	}
	var nb *netBooth
	mounts := []detached{{fd: ovl, path: s.Lower, what: "the overlay over the workspace", rank: rankOverlay}}
	if s.NetNone {
		if nb, err = startNet(s); err != nil {
			return nil, err
		}
		if mounts, err = mountResolv(s, mounts); err != nil {
			return nil, err
		}
	}
	for _, st := range s.Staged {
		fd, err := overlayMount(st.Lower, st.Upper, st.Work)
		if err != nil {
			return nil, fmt.Errorf("stage %s: %w", st.Lower, err)
		}
		mounts = append(mounts, detached{fd: fd, path: st.Lower, what: "the overlay over " + st.Lower, rank: rankOverlay})
	}
	for _, h := range s.Hide {
		fd, err := tmpfsMount("size=4k,mode=0555", unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
		if err != nil {
			return nil, fmt.Errorf("hide %s: %w", h, err)
		}
		mounts = append(mounts, detached{fd: fd, path: h, what: "the tmpfs over " + h, rank: rankPrivate})
	}
	tmp, err := privateTmp(s)
	if err != nil {
		return nil, err
	}
	shm, err := tmpfsMount("mode=1777", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return nil, fmt.Errorf("private /dev/shm: %w", err)
	}
	mounts = append(mounts, tmp, detached{fd: shm, path: "/dev/shm", what: "a private /dev/shm", rank: rankPrivate})
	dev, err := minimalDev()
	if err != nil {
		return nil, err
	}
	mounts = append(mounts, dev...)
	socks, err := hideHostSockets(s)
	if err != nil {
		return nil, err
	}
	mounts = append(mounts, socks...)
	for _, p := range s.ReadOnly {
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, fmt.Errorf("keep %s visible: %w", p, err)
		}
		fd, err := cloneTree(p, true)
		if err != nil {
			return nil, fmt.Errorf("keep %s visible: %w", p, err)
		}
		mounts = append(mounts, detached{fd: fd, path: p, what: "read-only " + p, file: !fi.IsDir(), rank: rankKept})
	}
	liveDirs = s.WriteLive
	for _, p := range s.WriteLive {
		fd, err := cloneTree(p, false)
		if err != nil {
			return nil, fmt.Errorf("--allow-write-live %s: %w", p, err)
		}
		mounts = append(mounts, detached{fd: fd, path: p, what: "writable " + p, rank: rankKept})
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &attr); err != nil {
		return nil, fmt.Errorf("make the file system read-only: %w", err)
	}
	if err := mountProc(); err != nil {
		return nil, err
	}
	if err := attach(mounts); err != nil {
		return nil, err
	}
	return nb, finishDev()
}

// mountResolv adds s.Resolv, read-only, over the file /etc/resolv.conf
// leads to, where there is one (a system without it asks 127.0.0.1, which
// is the booth's own loopback and answers nothing).
func mountResolv(s Spec, mounts []detached) ([]detached, error) {
	real, err := filepath.EvalSymlinks("/etc/resolv.conf")
	if s.Resolv == "" || err != nil {
		return mounts, nil
	}
	fd, err := cloneTree(s.Resolv, true)
	if err != nil {
		return nil, fmt.Errorf("the booth's resolv.conf: %w", err)
	}
	return append(mounts, detached{fd: fd, path: real, what: "the booth's resolv.conf", file: true, rank: rankPrivate}), nil
}

// procReadOnly are the parts of /proc that reach the host's kernel rather
// than the booth's processes, as bubblewrap keeps them: read-only, so a
// command run by root cannot set kernel parameters (core_pattern runs a
// program as the host's root) or trigger SysRq.
var procReadOnly = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"}

// mountProc mounts a /proc for the booth's PID namespace and makes
// procReadOnly read-only in it.
func mountProc() error {
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc for the PID namespace: %w", err)
	}
	for _, p := range procReadOnly {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		fd, err := cloneTree(p, true)
		if err == nil {
			err = unix.MoveMount(fd, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH)
			unix.Close(fd)
		}
		if err != nil {
			return fmt.Errorf("make %s read-only: %w", p, err)
		}
	}
	return nil
}

// hideHostSockets makes the detached mounts that hide the host's unix
// sockets (see hostSockets).
func hideHostSockets(s Spec) ([]detached, error) {
	kept := append(append([]string{s.Lower}, s.ReadOnly...), s.WriteLive...)
	for _, st := range s.Staged {
		kept = append(kept, st.Lower)
	}
	h := findHostSockets(os.Getenv, os.Getenv("HOME"), kept)
	var out []detached
	for _, d := range h.Dirs {
		fd, err := tmpfsMount("size=64k,mode=0755", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
		if err != nil {
			return nil, fmt.Errorf("hide the sockets in %s: %w", d, err)
		}
		out = append(out, detached{fd: fd, path: d, what: "an empty " + d, rank: rankPrivate, seal: true})
	}
	for _, f := range h.Files {
		fd, err := cloneTree("/dev/null", false)
		if err != nil {
			return nil, fmt.Errorf("hide the socket %s: %w", f, err)
		}
		out = append(out, detached{fd: fd, path: f, what: "a null device over " + f, file: true, rank: rankPrivate})
	}
	for _, k := range h.Keep {
		fd, err := cloneTree(k, true)
		if err != nil {
			return nil, fmt.Errorf("keep %s visible: %w", k, err)
		}
		out = append(out, detached{fd: fd, path: k, what: "read-only " + k, file: true, rank: rankKept})
	}
	return out, nil
}

// devNodes are the host devices the booth's /dev keeps, as bubblewrap's
// --dev does: nothing that reaches a disk, a console or another user's
// terminal (root in the booth keeps root's file permissions, and a
// read-only mount does not stop writes to a device).
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// minimalDev is a tmpfs for /dev and a clone of each of devNodes, to be
// attached; finishDev completes it once attached.
func minimalDev() ([]detached, error) {
	fd, err := tmpfsMount("mode=0755", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return nil, fmt.Errorf("private /dev: %w", err)
	}
	out := []detached{{fd: fd, path: "/dev", what: "a private /dev", rank: rankPrivate}}
	for _, n := range devNodes {
		p := "/dev/" + n
		if _, err := os.Stat(p); err != nil {
			continue
		}
		fd, err := cloneTree(p, false)
		if err != nil {
			return nil, fmt.Errorf("private /dev: %s: %w", p, err)
		}
		out = append(out, detached{fd: fd, path: p, what: p, file: true, rank: rankPrivate})
	}
	return out, nil
}

// finishDev gives the booth's /dev its own pseudo-terminals (a new devpts
// instance: the host's terminals stay out of reach), the usual symlinks,
// then makes it read-only. A kernel that refuses devpts leaves the booth
// without new terminals rather than without confinement.
func finishDev() error {
	if os.Mkdir("/dev/pts", 0o755) == nil {
		if unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") == nil {
			os.Symlink("pts/ptmx", "/dev/ptmx")
		}
	}
	for _, l := range [][2]string{{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"},
		{"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}} {
		if err := os.Symlink(l[1], "/dev/"+l[0]); err != nil {
			return fmt.Errorf("private /dev: %w", err)
		}
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/dev", 0, &attr); err != nil {
		return fmt.Errorf("private /dev: read-only: %w", err)
	}
	return nil
}

// attach moves the detached mounts into place, parents before children
// (the workspace before the tmpfs over its state, /tmp before a workspace
// under it), and at the same path by rank, so what hides wins; it creates
// missing mount points on the way (those can only be in a tmpfs made here,
// since the rest is read-only), then seals the tmpfs that needed them.
func attach(mounts []detached) error {
	sort.SliceStable(mounts, func(i, j int) bool {
		di, dj := depth(mounts[i].path), depth(mounts[j].path)
		return di < dj || di == dj && mounts[i].rank < mounts[j].rank
	})
	defer func() {
		for _, m := range mounts {
			unix.Close(m.fd) // those not attached after an error
		}
	}()
	for i, m := range mounts {
		if err := mountPoint(m); err != nil {
			return fmt.Errorf("mount point for %s: %w", m.what, err)
		}
		err := unix.MoveMount(m.fd, "", unix.AT_FDCWD, m.path, unix.MOVE_MOUNT_F_EMPTY_PATH)
		unix.Close(m.fd)
		mounts[i].fd = -1
		if err != nil {
			return fmt.Errorf("attach %s: %w", m.what, err)
		}
	}
	ro := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	for _, m := range mounts {
		if !m.seal {
			continue
		}
		if err := unix.MountSetattr(unix.AT_FDCWD, m.path, 0, &ro); err != nil {
			return fmt.Errorf("make %s read-only: %w", m.what, err)
		}
	}
	return nil
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }

// mountPoint makes m's mount point where it is missing: a folder, or an
// empty file for a device node.
func mountPoint(m detached) error {
	if !m.file {
		return os.MkdirAll(m.path, 0o755)
	}
	if _, err := os.Lstat(m.path); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(m.path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(m.path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// overlayMount makes the overlay over the workspace as a detached mount.
// userxattr is needed in a user namespace; kernels before 5.11 lack it.
//
// It is volatile where the kernel has that (5.10): the unmount at the end
// of the run then does not sync the file system holding the staging area,
// which cost milliseconds, and more when the disk was busy. The staging
// area is made durable when it must be: by the commit, before its
// decision record, and when a run leaves its transaction open (Tx.Flush).
// A volatile overlay marks its work folder, which the caller makes anew
// for each run.
func overlayMount(lower, upper, work string) (int, error) {
	try := func(userxattr bool) (int, error) {
		fs, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
		if err != nil {
			return -1, err
		}
		defer unix.Close(fs)
		for _, kv := range [][2]string{{"lowerdir", ovlEscape(lower)}, {"upperdir", ovlEscape(upper)}, {"workdir", ovlEscape(work)}} {
			if err := unix.FsconfigSetString(fs, kv[0], kv[1]); err != nil {
				return -1, fmt.Errorf("%s: %w", kv[0], err)
			}
		}
		if userxattr {
			if err := unix.FsconfigSetFlag(fs, "userxattr"); err != nil {
				return -1, err
			}
		}
		unix.FsconfigSetFlag(fs, "volatile") // refused by kernels that lack it, and then not set
		if err := unix.FsconfigCreate(fs); err != nil {
			return -1, err
		}
		return unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, 0)
	}
	fd, err := try(true)
	if err == nil {
		return fd, nil
	}
	fd, err2 := try(false)
	if err2 != nil {
		return -1, fmt.Errorf("mount overlayfs: %w (and without userxattr: %v)", err, err2)
	}
	return fd, nil
}

func tmpfsMount(opts string, attrs int) (int, error) {
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, err
	}
	defer unix.Close(fs)
	for _, kv := range strings.Split(opts, ",") {
		k, v, _ := strings.Cut(kv, "=")
		if err := unix.FsconfigSetString(fs, k, v); err != nil {
			return -1, fmt.Errorf("tmpfs %s: %w", k, err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, err
	}
	return unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, attrs)
}

// cloneTree is a detached copy of the mounts at and under p, read-only if
// asked (else as they are).
func cloneTree(p string, readOnly bool) (int, error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW)
	if err != nil || !readOnly {
		return fd, err
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// ovlEscape escapes the characters overlayfs options treat specially.
func ovlEscape(p string) string {
	return strings.NewReplacer(`\`, `\\`, `,`, `\,`, `:`, `\:`).Replace(p)
}
