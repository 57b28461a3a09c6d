//go:build linux

package sandbox

import (
	"slices"
	"testing"
)

// TestCheckKept: a path asked to stay visible may not uncover what the
// booth hides or gives the agent its own of.
func TestCheckKept(t *testing.T) {
	hide := []string{"/w/.jukebox/booth", "/home/u/.local/state/jukebox"}
	for _, c := range []struct {
		readOnly, writeLive string
		ok                  bool
	}{
		{readOnly: "/w/tapes", ok: true},
		{readOnly: "/tmp/tapes/run.jbx", ok: true},
		{writeLive: "/home/u/.cache", ok: true},
		{readOnly: "/tmp"},
		{readOnly: "/"},
		{writeLive: "/dev/shm"},
		{writeLive: "/proc"},
		{writeLive: "/proc/sys"},
		{writeLive: "/dev"},
		{writeLive: "/sys/fs/cgroup"},
		{readOnly: "/home/u/.local/state/jukebox/run.jbx"},
		{writeLive: "/w/.jukebox/booth"},
		{writeLive: "/run"},
		{writeLive: "/var/run"},
		{readOnly: "/run/systemd/resolve/stub-resolv.conf", ok: true},
	} {
		s := initSpec{Hide: hide}
		if c.readOnly != "" {
			s.ReadOnly = []string{c.readOnly}
		}
		if c.writeLive != "" {
			s.WriteLive = []string{c.writeLive}
		}
		if err := checkKept(s); (err == nil) != c.ok {
			t.Errorf("checkKept(read-only %q, write-live %q) = %v, want ok=%v", c.readOnly, c.writeLive, err, c.ok)
		}
	}
}

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
		s := initSpec{Hide: hide, ReadOnly: got}
		if err := checkKept(s); err != nil {
			t.Errorf("protected(%s) = %q, which the booth refuses: %v", c.tape, got, err)
		}
	}
}
