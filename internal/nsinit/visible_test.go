//go:build linux

package nsinit

import (
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
		s := Spec{Hide: hide}
		if c.readOnly != "" {
			s.ReadOnly = []string{c.readOnly}
		}
		if c.writeLive != "" {
			s.WriteLive = []string{c.writeLive}
		}
		if err := CheckKept(s); (err == nil) != c.ok {
			t.Errorf("CheckKept(read-only %q, write-live %q) = %v, want ok=%v", c.readOnly, c.writeLive, err, c.ok)
		}
	}
}
