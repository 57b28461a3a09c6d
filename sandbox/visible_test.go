//go:build linux

package sandbox

import (
	"slices"
	"testing"

	"github.com/jukebox-os/jukebox/internal/nsinit"
)

// TestProtected: the tape is kept from the agent by its folder, or by the
// file alone where its folder is the booth's own (/tmp, /) or holds the
// workspace; a tape the agent cannot see needs nothing. Before, a tape in
// /tmp asked for /tmp to stay visible, which the booth refused, and the
// run fell back to the copy, unconfined.
func TestProtected(t *testing.T) {
	hide := []string{"/w/.jukebox/booth", "/home/u/.local/state/jukebox"}
	for _, c := range []struct {
		tape string
		want []string
	}{
		{"/w/tapes/run.jbx", []string{"/w/tapes"}},
		{"/w/run.jbx", []string{"/w/run.jbx"}},
		{"/run.jbx", []string{"/run.jbx"}},
		{"/tmp/run.jbx", []string{"/tmp/run.jbx"}},
		{"/tmp/tapes/run.jbx", []string{"/tmp/tapes"}},
		{"/srv/tapes/run.jbx", []string{"/srv/tapes"}},
		{"/dev/shm/run.jbx", nil},
		{"/dev/shm/tapes/run.jbx", nil},
		{"/home/u/.local/state/jukebox/run.jbx", nil},
		{"/w", nil},
		{"/", nil},
	} {
		got := protected("/w", []string{c.tape}, hide)
		if !slices.Equal(got, c.want) {
			t.Errorf("protected(%s) = %q, want %q", c.tape, got, c.want)
		}
		s := nsinit.Spec{Hide: hide, ReadOnly: got}
		if err := nsinit.CheckKept(s); err != nil {
			t.Errorf("protected(%s) = %q, which the booth refuses: %v", c.tape, got, err)
		}
	}
}
