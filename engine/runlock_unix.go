//go:build unix

package engine

import (
	"os"
	"path/filepath"
	"syscall"

	"github.com/jukebox-os/jukebox/internal/keeper"
)

// runLock is the name of the file in a run's folder that the run holds
// an flock on while it lives: the kernel lets it go when the process
// ends, however it ends, whatever pid namespace it ran in.
const runLock = ".held"

// sweepEntries bounds what a sweep reads of the temporary folder.
const sweepEntries = 20000

// holdRunFolder locks dir's runLock for the life of this process (or
// until the returned file is closed). Nil when it cannot: the folder is
// then never swept, as a folder of an earlier release. The file is
// locked under another name and then renamed: a sweep never finds it
// unlocked while its run lives.
func holdRunFolder(dir string) *os.File {
	name := filepath.Join(dir, runLock)
	f, err := os.OpenFile(name+"-new", os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil || os.Rename(name+"-new", name) != nil {
		f.Close()
		os.Remove(name + "-new")
		return nil
	}
	return f
}

// sweepRunFolders removes the run folders (keeper.RunPrefix) in parent
// that a jukebox left when it was killed and nothing removed after it (a
// booth run's agent runs under the booth's init, not the keeper, which
// removes the folder of a run outside the booth): a folder of this
// user's, not a link, whose runLock nobody holds. A folder without the
// file (an earlier release's, or one being made) is left alone. It reads
// sweepEntries entries of parent at most (the run's end waits for the
// sweep), and returns how many folders it removed.
func sweepRunFolders(parent string) int {
	d, err := os.Open(parent)
	if err != nil {
		return 0
	}
	ents, _ := d.ReadDir(sweepEntries)
	d.Close()
	n := 0
	for _, e := range ents {
		dir := filepath.Join(parent, e.Name())
		if !e.IsDir() || !keeper.IsRunFolder(dir) {
			continue // a link to a folder is not one here (ReadDir does not follow it)
		}
		// Not blocking: a FIFO planted under the name would hold the open
		// (and the run's end, which waits for its sweep) for ever.
		fd, err := syscall.Open(filepath.Join(dir, runLock), syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var lst syscall.Stat_t
		if syscall.Fstat(fd, &lst) == nil && lst.Mode&syscall.S_IFMT == syscall.S_IFREG &&
			syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) == nil && os.RemoveAll(dir) == nil {
			n++
		}
		syscall.Close(fd)
	}
	return n
}
