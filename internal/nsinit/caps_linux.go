package nsinit

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The init holds every capability of the booth's user namespace: it
// mounts. The command gets none of them, or, when root runs the booth,
// only rootKeeps (root's file permissions and identity changes: what a
// tool run as root expects, and all confined to the booth's namespaces).
// Without CAP_SYS_ADMIN the command cannot unmount or remount anything the
// init built, and the seccomp filter refuses the mount calls and a new
// user namespace besides (in which the kernel would lock every mount
// anyway, as it does for any namespace created by a less privileged one).
var rootKeeps = []int{
	unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH, unix.CAP_FOWNER,
	unix.CAP_FSETID, unix.CAP_KILL, unix.CAP_SETGID, unix.CAP_SETUID,
	unix.CAP_NET_BIND_SERVICE, unix.CAP_AUDIT_WRITE,
}

// lastCap is the highest capability this kernel knows.
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 && n < 64 {
			return n
		}
	}
	return unix.CAP_LAST_CAP
}

// allCaps is every capability this kernel knows: the init's ambient set
// when a non-root user runs the booth. The init then runs as that user
// (so the command does too) and keeps across its exec what the new user
// namespace gave it.
func allCaps() []uintptr {
	out := make([]uintptr, lastCap()+1)
	for i := range out {
		out[i] = uintptr(i)
	}
	return out
}

// dropCaps leaves the calling thread only the capabilities in keep, in
// every set, the bounding set included (so no exec can get the others
// back), and no ambient ones. Capabilities are per thread: the caller
// locks its OS thread and starts the command from it.
func dropCaps(keep []int) error {
	for c := 0; c < 64; c++ {
		if slices.Contains(keep, c) {
			continue
		}
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break // past the last capability this kernel knows
		}
		if err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	for _, c := range keep {
		data[c/32].Effective |= 1 << (c % 32)
		data[c/32].Permitted |= 1 << (c % 32)
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}
