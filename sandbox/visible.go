package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Places the booth gives the agent its own of, or empties (hostsockets):
// a path asked to stay visible there at its absolute path (the tape's
// folder, a --allow-write-live folder) would be covered, or would uncover
// what the booth hides.
var (
	ownPlaces = []string{"/", "/tmp", "/dev/shm", "/run", "/var/run"} // the place itself; a folder below it may stay visible
	ownTrees  = []string{"/proc", "/dev", "/sys"}                     // the place and everything below it
)

// visibleError says why the clean absolute path p cannot stay visible in
// the booth, whose hidden folders are hide, or nil. The reason does not
// repeat p.
func visibleError(p string, hide []string) error {
	for _, h := range hide {
		if pathWithin(p, h) {
			return fmt.Errorf("the booth hides %s from the agent", h)
		}
	}
	if slices.Contains(ownPlaces, p) {
		return fmt.Errorf("the booth gives the agent its own %s", p)
	}
	for _, t := range ownTrees {
		if pathWithin(p, t) {
			return fmt.Errorf("the booth gives the agent its own %s", t)
		}
	}
	return nil
}

// checkKept refuses a path asked to stay visible (visibleError). The
// parent checks before it starts the booth, so that the answer is an
// error and never the copy fallback; stage 1 checks again, as the last
// line.
func checkKept(s initSpec) error {
	staged := make([]string, len(s.Staged))
	for i, st := range s.Staged {
		staged[i] = st.Lower
	}
	for _, p := range slices.Concat(s.ReadOnly, s.WriteLive, staged) {
		if err := visibleError(p, s.Hide); err != nil {
			return fmt.Errorf("%s cannot stay visible: %w", p, err)
		}
	}
	return nil
}

// hidden are the folders a booth over w hides from the agent: its state
// (staging areas, journals) and the journal key's folder (an agent that
// read the key could forge a journal for a later run).
func hidden(w *workspace, opts Options) []string {
	var out []string
	if w.stateRel != "" {
		out = append(out, w.stateRoot)
	}
	if key, err := KeyFile(opts); err == nil {
		if fi, err := os.Stat(filepath.Dir(key)); err == nil && fi.IsDir() {
			out = append(out, filepath.Dir(key))
		}
	}
	return out
}

// CheckWriteLive says why dir, absolute and clean, cannot be written live
// by the agent of a booth over the workspace ws, or nil: it is a place
// the booth gives the agent its own of (/, /tmp, /dev/shm, /run, or
// anything under /proc, /dev or /sys), or lies in a folder the booth hides
// (its state, the journal key's folder). Commands call it before they
// start, to refuse the flag with its name.
func CheckWriteLive(ws, dir string, opts Options) error {
	w, err := newWorkspace(ws, opts)
	if err != nil {
		return err
	}
	hide := hidden(w, opts)
	if key, err := KeyFile(opts); err == nil {
		hide = append(hide, filepath.Dir(key)) // hidden once a booth has made it
	}
	return visibleError(dir, hide)
}

// protected are the paths to keep read-only so that files that must not
// change (the tape being recorded) do not, given the folders the booth
// hides: each file's folder, so that nothing is planted beside it, or the
// file alone when its folder is the workspace or holds it (it would cover
// the overlay) or is a place the booth gives the agent its own of (/tmp,
// say). A file the agent cannot see at all (in a hidden folder, or under
// /dev or /proc) needs nothing; nor does the workspace or a folder
// holding it, which is never made read-only.
func protected(ws string, files, hide []string) []string {
	var out []string
	for _, f := range files {
		dir := filepath.Dir(f)
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		f = filepath.Join(dir, filepath.Base(f))
		switch {
		case pathWithin(ws, f):
			// the workspace itself, or a folder holding it
		case visibleError(f, hide) != nil:
			// the agent sees its own there, or nothing
		case pathWithin(ws, dir) || visibleError(dir, hide) != nil:
			out = append(out, f)
		default:
			out = append(out, dir)
		}
	}
	return out
}
