package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/jukebox-os/jukebox/internal/nsinit"
)

// Capabilities is what this machine offers the booth; `jukebox doctor`
// prints it.
type Capabilities struct {
	UID            int  `json:"uid"` // the user probed for
	UserNamespaces bool `json:"user_namespaces"`
	Overlay        bool `json:"overlayfs"`
	// Confined: the overlay booth's confinement was set up whole (read-only
	// system, private /tmp, PID namespace, capabilities dropped, seccomp). It is
	// set up with the overlay or not at all, so it equals Overlay; without
	// it --booth (auto) refuses to start the agent.
	Confined bool `json:"confined"`
	// NetNone: a network namespace for --net none can be made too.
	NetNone bool   `json:"net_none"`
	Reflink bool   `json:"reflink"`
	Wazero  string `json:"wazero"` // module version, "" if unknown
	// Init is the booth's init: the path of jukebox-booth beside this
	// executable, or "self" when this executable is started again (no
	// jukebox-booth there, or one built from other source); "" unprobed.
	Init     string `json:"init,omitempty"`
	ExecMode Mode   `json:"exec_mode"` // what --booth (auto) runs: overlay, or "" (it refuses)
	// Unsupported, where the booth cannot run on this platform at all,
	// says why (Supported's reason); nothing else is probed then.
	Unsupported string `json:"unsupported,omitempty"`
	// Notes explain each "no", one line each.
	Notes []string `json:"notes,omitempty"`
}

// Probe checks, by trying them, what the booth can use here: a user+mount
// namespace with overlayfs (through the re-executed init, so MaybeRunInit
// must run in main), and reflinks in dir's file system. Where the booth
// cannot run at all (see Supported) it tries nothing, sets Unsupported
// and leaves ExecMode empty.
func Probe(ctx context.Context, dir string) Capabilities {
	return probe(ctx, dir, Supported())
}

// probe is Probe with the platform's answer given, so the answer for a
// platform without the booth can be tested on Linux.
func probe(ctx context.Context, dir string, unsupported error) Capabilities {
	c := Capabilities{UID: os.Getuid(), Wazero: moduleVersion("github.com/tetratelabs/wazero")}
	if unsupported != nil {
		c.Unsupported = unsupported.Error()
		var ue *UnsupportedError
		if errors.As(unsupported, &ue) {
			c.Unsupported = ue.Reason()
		}
		return c
	}
	tmp, err := probeDir(dir, &c.Notes)
	if err != nil {
		c.Notes = append(c.Notes, "probe: "+err.Error())
		return c
	}
	defer removeAll(tmp)
	c.UserNamespaces, c.Overlay, c.NetNone = probeOverlay(ctx, tmp, &c.Notes)
	c.Confined = c.Overlay
	if c.UserNamespaces {
		c.Init = nsinit.Path() // after the probe, which distrusts a helper built from other source
		if c.Init == nsinit.Self {
			c.Init = "self"
		}
	}
	if c.Overlay {
		c.ExecMode = ModeOverlay
	} else {
		c.Notes = append(c.Notes, "confinement: none: --booth refuses to start the agent (exit 2); --booth-mode copy runs it unconfined, in a copy of the workspace")
	}
	c.Reflink = probeReflink(tmp)
	if !c.Reflink {
		c.Notes = append(c.Notes, "reflink: the file system cannot clone files; copy mode copies bytes")
	}
	return c
}

// probeDir makes the probe's folder in dir (the workspace: the booth's
// staging area lives on its file system) or, where this user cannot write
// there, in the temporary folder, and says so: the namespaces are this
// user's either way.
func probeDir(dir string, notes *[]string) (string, error) {
	tmp, err := os.MkdirTemp(dir, ".jukebox-probe-")
	if err == nil {
		return tmp, nil
	}
	tmp, err2 := os.MkdirTemp("", "jukebox-probe-")
	if err2 != nil {
		return "", fmt.Errorf("%v; and in the temporary folder: %v", err, err2)
	}
	*notes = append(*notes, fmt.Sprintf("probe: %v: probed in %s instead (a booth needs its workspace writable)", err, os.TempDir()))
	return tmp, nil
}

// probeOverlay starts the booth's init twice: with the overlay, then with
// a network namespace too, each with a work folder of its own (the
// overlay is volatile, which marks the work folder it used).
func probeOverlay(ctx context.Context, tmp string, notes *[]string) (userns, overlay, netNone bool) {
	spec := nsinit.Spec{Probe: true, Lower: filepath.Join(tmp, "lower"), Upper: filepath.Join(tmp, "upper"), Work: filepath.Join(tmp, "work"),
		TmpUpper: filepath.Join(tmp, "tmp")}
	for _, d := range []string{spec.Lower, spec.Upper, spec.Work, spec.TmpUpper} {
		os.Mkdir(d, 0o700)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	o := ExecOptions{Args: []string{"probe"}, Stdout: io.Discard, Stderr: io.Discard}
	_, err := runInitChild(ctx, spec, o, nil)
	if err != nil {
		*notes = append(*notes, "overlay: "+err.Error())
		// The namespace may exist even if the mount was refused.
		return !errors.Is(err, errNoUserNS), false, false
	}
	spec.NetNone, spec.Work = true, filepath.Join(tmp, "work-net")
	if err := os.Mkdir(spec.Work, 0o700); err != nil {
		*notes = append(*notes, "--net none: "+err.Error())
		return true, true, false
	}
	if _, err := runInitChild(ctx, spec, o, nil); err != nil {
		*notes = append(*notes, "--net none: "+err.Error())
		return true, true, false
	}
	return true, true, true
}

func probeReflink(tmp string) bool {
	src := filepath.Join(tmp, "reflink-src")
	if os.WriteFile(src, []byte("jukebox"), 0o600) != nil {
		return false
	}
	return canReflink(src, filepath.Join(tmp, "reflink-dst"))
}

func moduleVersion(path string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, m := range info.Deps {
		if m.Path == path {
			return m.Version
		}
	}
	return ""
}
