package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// overlayView opens the workspace ws as the booth's init (pid, this
// process's child, not waited for yet) sees it: the overlay mounted over
// ws in the init's mount namespace. The path is resolved inside the
// init's root, so that no link on the way leads back to the host's side;
// what is opened must be an overlay, and not the workspace itself (whose
// file system may be an overlay too, in a container).
func overlayView(pid int, ws string) (*os.Root, error) {
	base, err := os.OpenRoot(filepath.Join("/proc", strconv.Itoa(pid), "root"))
	if err != nil {
		return nil, err
	}
	defer base.Close()
	view, err := base.OpenRoot(strings.TrimPrefix(filepath.Clean(ws), "/"))
	if err != nil {
		return nil, err
	}
	if err := isOverlayOver(view, ws); err != nil {
		view.Close()
		return nil, err
	}
	return view, nil
}

// isOverlayOver checks that view is an overlay's root, not ws's folder.
func isOverlayOver(view *os.Root, ws string) error {
	f, err := view.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	var fsst unix.Statfs_t
	var st, real unix.Stat_t
	if err := unix.Fstatfs(int(f.Fd()), &fsst); err != nil {
		return err
	}
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	if err := unix.Stat(ws, &real); err != nil {
		return err
	}
	if fsst.Type != unix.OVERLAYFS_SUPER_MAGIC || st.Dev == real.Dev {
		return errors.New("sandbox: the booth's view of the workspace is not its overlay")
	}
	return nil
}
