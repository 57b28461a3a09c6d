package nsinit

import "syscall"

// Attr is how the init for s is started: PID 1 of new user, mount, PID
// and IPC namespaces (and network, for NetNone), as the caller's own uid
// with every capability of its user namespace (ambient, for a non-root
// caller, so they outlive the init's exec), killed if its parent dies.
//
// The init leads a session of its own (Setsid): a process group outlives
// a PID namespace's borders, so an agent in jukebox's group could signal
// jukebox and the user's shell job (kill 0) and, on the terminal jukebox
// controls, take the foreground. Without a controlling terminal the agent
// still reads and writes the terminal through its standard streams, but
// Ctrl-C and Ctrl-\ reach jukebox only, which stops the booth.
func Attr(s Spec) *syscall.SysProcAttr {
	flags := syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC
	if s.NetNone {
		flags |= syscall.CLONE_NEWNET
	}
	a := &syscall.SysProcAttr{
		Cloneflags:  uintptr(flags),
		UidMappings: ownMap(s.UID),
		GidMappings: ownMap(s.GID),
		Pdeathsig:   syscall.SIGKILL,
		Setsid:      true,
	}
	if s.UID != 0 {
		a.AmbientCaps = allCaps()
	}
	return a
}

// ownMap maps the caller's own id into the booth's user namespace (root
// keeps every id, so root's access to files of other users is unchanged):
// the init runs as the caller, with the capabilities the new namespace
// gives it kept as ambient ones, and so does the command, without them.
func ownMap(id int) []syscall.SysProcIDMap {
	if id == 0 {
		return []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
	}
	return []syscall.SysProcIDMap{{ContainerID: id, HostID: id, Size: 1}}
}
