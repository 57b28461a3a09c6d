package main

import (
	"cmp"
	"context"
	"fmt"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/sandbox"
)

// DoctorCmd prints what this machine offers the Shadow Booth.
type DoctorCmd struct {
	Dir  string `default:"." type:"path" help:"Directory whose file system is checked for reflinks."`
	JSON bool   `help:"Print JSON."`
}

// probeBooth is sandbox.Probe, replaced in tests (the probe re-executes
// the binary as the namespace init).
var probeBooth = sandbox.Probe

// Run probes and prints one line per capability.
func (c *DoctorCmd) Run(ctx context.Context, env *Env) error {
	caps := probeBooth(ctx, c.Dir)
	if c.JSON {
		return boothJSON(env.Stdout, caps)
	}
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	w := env.Stdout
	if caps.Unsupported != "" {
		fmt.Fprintf(w, "booth            unavailable: %s\n", caps.Unsupported)
	}
	fmt.Fprintf(w, "user             uid %d\n", caps.UID)
	fmt.Fprintf(w, "user namespaces  %s\n", yes(caps.UserNamespaces))
	fmt.Fprintf(w, "overlayfs        %s\n", yes(caps.Overlay))
	fmt.Fprintf(w, "confinement      %s\n", confinement(caps))
	fmt.Fprintf(w, "--net none       %s\n", yes(caps.NetNone))
	fmt.Fprintf(w, "reflink          %s\n", yes(caps.Reflink))
	wz := caps.Wazero
	if wz == "" {
		wz = "built in"
	}
	fmt.Fprintf(w, "wazero (WASI)    %s\n", wz)
	none := "none: --booth refuses to start the agent; --booth-mode copy runs it unconfined"
	if caps.Unsupported != "" {
		none = "none"
	}
	fmt.Fprintf(w, "booth exec mode  %s\n", cmp.Or(string(caps.ExecMode), none))
	switch caps.Init {
	case "":
	case "self":
		fmt.Fprintf(w, "booth init       jukebox itself (jukebox-booth, beside jukebox, starts faster: go install github.com/jukebox-os/jukebox/cmd/...)\n")
	default:
		fmt.Fprintf(w, "booth init       %s\n", termtext.Quote(caps.Init))
	}
	for _, n := range caps.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	return nil
}

// confinement says what an agent in the booth is kept from, for this user.
func confinement(c sandbox.Capabilities) string {
	if c.Confined {
		return "yes (read-only system, private /tmp over the host's with its sockets unreachable, own PID namespace, capabilities dropped, seccomp)"
	}
	return "no: --booth (auto) refuses to start the agent here (exit 2); --booth-mode copy stages the workspace in a copy but does not confine the agent"
}
