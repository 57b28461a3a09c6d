package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// copyData copies in's content into out, which is empty, keeping holes
// (copyFD). fi describes in.
func copyData(out, in *os.File, fi fs.FileInfo) error {
	if err := copyFD(int(out.Fd()), int(in.Fd()), fi); err != nil {
		return &fs.PathError{Op: "copy", Path: in.Name(), Err: err}
	}
	return nil
}

// copyFD copies the content of the file ifd (which fi describes) into the
// empty file ofd, keeping holes where the file has them: a file holding
// fewer blocks than its size is copied one data segment at a time
// (SEEK_DATA, SEEK_HOLE) and then extended to its size; any other with
// copy_file_range to its end (byte copies where the kernel cannot).
func copyFD(ofd, ifd int, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Blocks*512 >= fi.Size() {
		return copyRange(ofd, ifd, 0, 1<<62)
	}
	size := fi.Size()
	for off := int64(0); off < size; {
		data, err := unix.Seek(ifd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // nothing but a hole up to the end
		}
		if err != nil {
			return err
		}
		hole, err := unix.Seek(ifd, data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		if err := copyRange(ofd, ifd, data, hole-data); err != nil {
			return err
		}
		off = hole
	}
	return unix.Ftruncate(ofd, size)
}

// copyRange copies up to n bytes at off from ifd to the same offset of
// ofd, stopping early at the end of ifd.
func copyRange(ofd, ifd int, off, n int64) error {
	roff, woff := off, off
	for n > 0 {
		k, err := unix.CopyFileRange(ifd, &roff, ofd, &woff, int(min(n, 1<<30)), 0)
		if err != nil {
			if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
				return preadCopy(ofd, ifd, roff, n)
			}
			return err
		}
		if k == 0 {
			return nil // the end of the file
		}
		n -= int64(k)
	}
	return nil
}

// preadCopy is copyRange through a buffer.
func preadCopy(ofd, ifd int, off, n int64) error {
	buf := make([]byte, min(n, 1<<20))
	for n > 0 {
		k, err := unix.Pread(ifd, buf[:min(n, int64(len(buf)))], off)
		if err != nil {
			return err
		}
		if k == 0 {
			return nil
		}
		if _, err := unix.Pwrite(ofd, buf[:k], off); err != nil {
			return err
		}
		off += int64(k)
		n -= int64(k)
	}
	return nil
}

// copyRegular copies the regular file from, which fi describes, to a new
// file to with fi's permission bits: a reflink when clone is set and the
// file system takes it, else copyFD. It works on bare descriptors (no
// *os.File, which costs a poller registration and fcntls per file) and
// returns the copy's stamp and whether it was cloned.
func copyRegular(from, to string, fi fs.FileInfo, clone bool) (copyStamp, bool, error) {
	// O_NONBLOCK: a file swapped for a fifo since it was listed must not
	// hang the copy.
	in, err := unix.Open(from, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return copyStamp{}, false, &fs.PathError{Op: "open", Path: from, Err: err}
	}
	defer unix.Close(in)
	perm := Change{Mode: modeBits(fi.Mode())}.UnixMode() // setuid, setgid and sticky too
	out, err := unix.Open(to, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return copyStamp{}, false, &fs.PathError{Op: "create", Path: to, Err: err}
	}
	cloned := clone && unix.IoctlFileClone(out, in) == nil
	if !cloned {
		err = copyFD(out, in, fi)
	}
	if err == nil {
		err = copyFDMeta(out, in, perm, fi) // as cp -p: user xattrs and mtime
	}
	var st unix.Stat_t
	if err == nil {
		err = unix.Fstat(out, &st)
	}
	if err == nil && st.Mode&0o7777 != perm { // the umask took bits
		if err = unix.Fchmod(out, perm); err == nil {
			err = unix.Fstat(out, &st)
		}
	}
	if cerr := unix.Close(out); err == nil {
		err = cerr
	}
	if err != nil {
		return copyStamp{}, false, &fs.PathError{Op: "copy", Path: from, Err: err}
	}
	return copyStamp{ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), mode: modeBits(fi.Mode())}, cloned, nil
}

// fingerprintOf is the fingerprint takeFingerprint would take of the
// file fi describes (from an Lstat).
func fingerprintOf(rel string, fi fs.FileInfo) (fingerprint, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fingerprint{}, false
	}
	return fingerprint{Path: rel, Exists: true, Size: st.Size, Ino: st.Ino, Mode: uint32(st.Mode),
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}, true
}

// errPlaceBusy reports a copy's folder another process holds.
var errPlaceBusy = errors.New("in use")

// lockPlace opens the folder dir without following a symlink and takes
// its lock without waiting: a copy run holds it for as long as the copy
// lives, and a sweep removes only folders whose lock it gets. It fails
// with errPlaceBusy if another holds the lock, or if dir is no longer the
// folder it opened.
func lockPlace(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), dir)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, errPlaceBusy
		}
		return nil, err
	}
	var held, now unix.Stat_t
	if unix.Fstat(fd, &held) != nil || unix.Lstat(dir, &now) != nil || held.Dev != now.Dev || held.Ino != now.Ino {
		f.Close()
		return nil, errPlaceBusy
	}
	return f, nil
}

// sameDevice reports whether two paths are on one file system.
func sameDevice(a, b string) bool {
	var sa, sb unix.Stat_t
	return unix.Stat(a, &sa) == nil && unix.Stat(b, &sb) == nil && sa.Dev == sb.Dev
}

// dieWithUs asks the kernel to kill the child if jukebox dies, as the
// overlay's init is.
func dieWithUs(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// exitStatus turns cmd.Wait's error into an exit code, 128+N and N when
// signal N ended the child; only failures to run at all are errors.
func exitStatus(err error) (code, sig int, _ error) {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), int(ws.Signal()), nil
		}
		return ee.ExitCode(), 0, nil
	}
	if err != nil {
		return -1, 0, err
	}
	return 0, 0, nil
}

// terminalSent reports whether s is a Ctrl-C or Ctrl-\ the copy's child
// has had already: it shares jukebox's process group, and that group is
// the foreground of jukebox's terminal, which sent the signal to the whole
// group. Passing it on would interrupt the agent twice.
func terminalSent(s os.Signal) bool {
	if s != syscall.SIGINT && s != syscall.SIGQUIT {
		return false
	}
	tty, err := os.Open("/dev/tty")
	if err != nil {
		return false
	}
	defer tty.Close()
	fg, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	return err == nil && fg == unix.Getpgrp()
}
