package nsinit

import (
	"fmt"
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

// VisibleError says why the clean absolute path p cannot stay visible in
// the booth, whose hidden folders are hide, or nil. The reason does not
// repeat p.
func VisibleError(p string, hide []string) error {
	for _, h := range hide {
		if Within(p, h) {
			return fmt.Errorf("the booth hides %s from the agent", h)
		}
	}
	if slices.Contains(ownPlaces, p) {
		return fmt.Errorf("the booth gives the agent its own %s", p)
	}
	for _, t := range ownTrees {
		if Within(p, t) {
			return fmt.Errorf("the booth gives the agent its own %s", t)
		}
	}
	return nil
}

// CheckKept refuses a path asked to stay visible (VisibleError). The
// parent checks before it starts the booth, so that the answer is an
// error and never the copy fallback; the init checks again, as the last
// line.
func CheckKept(s Spec) error {
	staged := make([]string, len(s.Staged))
	for i, st := range s.Staged {
		staged[i] = st.Lower
	}
	for _, p := range slices.Concat(s.ReadOnly, s.WriteLive, staged) {
		if err := VisibleError(p, s.Hide); err != nil {
			return fmt.Errorf("%s cannot stay visible: %w", p, err)
		}
	}
	// A folder the agent may write around a hidden one: it would rename
	// the hidden folder away and make another in its place.
	for _, p := range slices.Concat(s.WriteLive, staged) {
		for _, h := range s.Hide {
			if Within(h, p) {
				return fmt.Errorf("%s cannot be writable: it holds %s, which the booth hides", p, h)
			}
		}
	}
	return nil
}

// Within reports whether the clean absolute path p is dir or lies below it.
func Within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}
