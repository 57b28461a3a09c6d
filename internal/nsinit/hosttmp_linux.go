package nsinit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// privateTmp is the booth's /tmp: an overlay whose lower layer is the
// host's /tmp, read-only beneath, and whose upper layer is a tmpfs of the
// run's own, mounted on s.TmpUpper in the booth's mount namespace alone,
// so that the agent's writes there are private and end with the run.
// Interpreters, venvs and scripts in the host's /tmp run in the booth.
//
// connect() to a unix socket through an overlay's lower layer reaches
// the host's listener: the command's connect(2) calls are made by the
// init, which looks a path in the booth's /tmp up in the upper layer
// alone (tmpUpper, unixconnect_linux.go).
// mountsUnder lists the mount points strictly below dir, from this
// process's mountinfo.
func mountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[4] != dir && Within(f[4], dir) {
			out = append(out, f[4])
		}
	}
	return out
}

func privateTmp(s Spec) (detached, error) {
	if s.TmpUpper == "" {
		return detached{}, errors.New("private /tmp: no folder for its upper layer")
	}
	if err := unix.Mount("tmpfs", s.TmpUpper, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700"); err != nil {
		return detached{}, fmt.Errorf("private /tmp: %w", err)
	}
	upper, work := filepath.Join(s.TmpUpper, "upper"), filepath.Join(s.TmpUpper, "work")
	for _, d := range []string{upper, work} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return detached{}, fmt.Errorf("private /tmp: %w", err)
		}
	}
	if err := os.Chmod(upper, 0o1777); err != nil {
		return detached{}, fmt.Errorf("private /tmp: %w", err)
	}
	for _, f := range s.TmpShared {
		p := filepath.Join(upper, f.Path)
		if !Within(p, upper) || p == upper {
			continue
		}
		if err := unix.Mkdir(p, 0o700); err != nil && err != unix.EEXIST {
			return detached{}, fmt.Errorf("private /tmp: %s: %w", f.Path, err)
		}
		if err := unix.Chmod(p, f.Mode&0o7777); err != nil {
			return detached{}, fmt.Errorf("private /tmp: %s: %w", f.Path, err)
		}
	}
	var err error
	if tmpUpper, err = unix.Open(upper, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return detached{}, fmt.Errorf("private /tmp: %w", err)
	}
	fd, err := overlayMount("/tmp", upper, work)
	if err != nil {
		if under := mountsUnder("/tmp"); len(under) > 0 {
			// The kernel clones no lower layer with mounts below it that
			// came from the host's namespace (they are locked): said, it
			// is a thing the user can change (umount it, or mount it
			// elsewhere), where "invalid argument" was all.
			return detached{}, fmt.Errorf("private /tmp over the host's: %w (the host's /tmp has a mount below it, %s, which the kernel will not layer under the booth's /tmp: unmount it or mount it outside /tmp)", err, under[0])
		}
		return detached{}, fmt.Errorf("private /tmp over the host's: %w", err)
	}
	tmpUpperDev = upperDev(fd)
	return detached{fd: fd, path: "/tmp", what: "a private /tmp over the host's", rank: rankPrivate}, nil
}

// upperDev is the device number the overlay at root gives the files of
// its upper layer (each layer has its own, or all share the overlay's
// when their inode numbers are made unique): it makes a file there and
// removes it. 0 (no file of the overlay has it) when that fails.
func upperDev(root int) uint64 {
	const probe = ".jukebox-upper-probe"
	fd, err := unix.Openat(root, probe, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return 0
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	unix.Close(fd)
	if unix.Unlinkat(root, probe, 0) != nil || err != nil {
		return 0
	}
	return st.Dev
}

// Limits of SharedTmp's walk of the host's /tmp: how deep it goes, how
// many folders it looks at (an lstat and an access check each), how many
// entries it reads in all and of one folder (files cost only their
// place in a listing), and how many folders it gives at most.
const (
	sharedTmpDepth     = 4
	sharedTmpFolders   = 5000
	sharedTmpEntries   = 50000
	sharedTmpPerFolder = 2000
	sharedTmpMax       = 256
)

// SharedTmp lists the folders of the host's /tmp (root) that the caller
// (uid, gid) may write in but that belong to another user or group, with
// their parents, parents first. The booth's user namespace maps the
// caller's ids alone (a caller other than root): overlayfs cannot copy
// such a folder up to its upper layer (it cannot give the copy an owner
// the namespace does not map, EOVERFLOW), so a file could not be made in
// it in the booth as it can on the host. Made in the upper layer
// beforehand (privateTmp), owned by the caller, each takes the agent's
// new files, private to the run as the rest of its /tmp. The walk looks
// at sharedTmpFolders folders at most, sharedTmpDepth deep, level by
// level; the files beside them (a run's scratch files, a cache's) count
// only against the larger budget of entries read.
func SharedTmp(root string, uid, gid int) []TmpFolder {
	if uid == 0 {
		return nil // root's namespace maps every id
	}
	var out []TmpFolder
	seen := map[string]bool{}
	folders, entries := sharedTmpFolders, sharedTmpEntries
	// Breadth first: a folder right in /tmp is found however large the
	// trees beside it (a module cache, a build's scratch space), which a
	// depth-first walk spent the budget on before reaching it.
	level := []string{""}
	for depth := 1; depth <= sharedTmpDepth && len(level) > 0; depth++ {
		var next []string
		for _, rel := range level {
			ents, err := readSome(filepath.Join(root, rel), min(sharedTmpPerFolder, entries))
			if err != nil {
				continue
			}
			for _, e := range ents {
				if entries--; entries < 0 || len(out) >= sharedTmpMax {
					return out
				}
				if !e.IsDir() {
					continue // not a symlink either
				}
				if folders--; folders < 0 {
					return out
				}
				r := filepath.Join(rel, e.Name())
				abs := filepath.Join(root, r)
				var st unix.Stat_t
				if unix.Lstat(abs, &st) != nil {
					continue
				}
				if (int(st.Uid) != uid || int(st.Gid) != gid) && unix.Access(abs, unix.W_OK|unix.X_OK) == nil {
					// its parents first, as privateTmp makes them
					for _, p := range append(parentsOf(r), r) {
						if seen[p] || len(out) >= sharedTmpMax {
							continue
						}
						var pst unix.Stat_t
						if unix.Lstat(filepath.Join(root, p), &pst) != nil {
							continue
						}
						seen[p] = true
						out = append(out, TmpFolder{Path: p, Mode: pst.Mode & 0o7777})
					}
				}
				if unix.Access(abs, unix.R_OK|unix.X_OK) == nil {
					next = append(next, r)
				}
			}
		}
		level = next
	}
	return out
}

// readSome reads at most n entries of the folder dir, sorted by name
// (all of them, sorted, when it holds no more).
func readSome(dir string, n int) ([]os.DirEntry, error) {
	if n <= 0 {
		return nil, nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(n)
	if err != nil && len(ents) == 0 {
		return nil, err
	}
	slices.SortFunc(ents, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

// parentsOf are the folders rel lies in, outermost first ("a/b/c": a,
// a/b).
func parentsOf(rel string) []string {
	var out []string
	for d := filepath.Dir(rel); d != "." && d != "/"; d = filepath.Dir(d) {
		out = append([]string{d}, out...)
	}
	return out
}
