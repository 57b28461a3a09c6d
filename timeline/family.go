package timeline

// A tape's family: the forks taken from it, and theirs in turn. A fork
// names its parent by chain head (run.start's parent), never by path, so
// the family is found by reading the run.start of the tapes around it.

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Kin is a tape found beside others: its chain head and, for a fork, the
// tape and frame it was forked from.
type Kin struct {
	Path   string
	Head   string             // chain head, hex
	Parent *tapefmt.ParentRef // nil for a tape that is no fork
	Frames int
	End    *tapefmt.RunEnd // how the run ended, nil when the tape has no run.end
	Name   string          // the run's name (a named fork's, fork --name)
}

// maxKin bounds the tapes read in one search.
const maxKin = 2000

// Descendants lists the tapes in dirs forked from a tape whose chain head
// is one of heads, and the tapes forked from those, parents before their
// children. Tapes that do not open, and the tapes of heads themselves, are
// left out; after maxKin tapes the search stops (truncated is true).
func Descendants(ctx context.Context, dirs []string, heads []string) (kin []Kin, truncated bool, err error) {
	all, truncated, err := Around(ctx, dirs)
	if err != nil {
		return nil, false, err
	}
	return DescendantsIn(all, heads), truncated, nil
}

// Around reads the tapes in dirs as kin (those that open), up to maxKin
// (truncated is true when there were more).
func Around(ctx context.Context, dirs []string) (all []Kin, truncated bool, err error) {
	read := 0
	seen := map[string]bool{}
	for _, dir := range dirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, false, err
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".jbx") || seen[p] {
				continue
			}
			seen[p] = true
			if read++; read > maxKin {
				return all, true, nil
			}
			if err := ctx.Err(); err != nil {
				return nil, false, err
			}
			if k, ok := readKin(p); ok {
				all = append(all, k)
			}
		}
	}
	return all, false, nil
}

// DescendantsIn picks out of all the tapes forked from a tape whose chain
// head is one of heads, and the tapes forked from those, parents before
// their children (the tapes of heads themselves left out).
func DescendantsIn(all []Kin, heads []string) (kin []Kin) {
	all = slices.Clone(all)
	known := map[string]bool{}
	for _, h := range heads {
		known[h] = true
	}
	for grew := true; grew; {
		grew = false
		for i := 0; i < len(all); i++ {
			k := all[i]
			if known[k.Head] || k.Parent == nil || !known[k.Parent.Tape] {
				continue
			}
			kin, known[k.Head], grew = append(kin, k), true, true
			all = slices.Delete(all, i, i+1)
			i--
		}
	}
	return kin
}

// readKin reads the head and run.start of the tape at p.
func readKin(p string) (Kin, bool) {
	t, err := tapefmt.Open(p)
	if err != nil {
		return Kin{}, false
	}
	defer t.Close()
	k := Kin{Path: p, Head: t.Head().String(), Frames: t.Len()}
	if t.Len() == 0 {
		return k, true
	}
	if f, err := t.Frame(0); err == nil {
		if p, err := f.Decode(); err == nil {
			if rs, ok := p.(*tapefmt.RunStart); ok {
				k.Parent, k.Name = rs.Parent, rs.Name
			}
		}
	}
	if f, err := t.Frame(t.Len() - 1); err == nil {
		if p, err := f.Decode(); err == nil {
			if end, ok := p.(*tapefmt.RunEnd); ok {
				k.End = end
			}
		}
	}
	return k, true
}
