package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/jukebox-os/jukebox/controlapi"
)

// maxAncestors bounds the walk up the process tree.
const maxAncestors = 64

// controlFromAncestors finds the run this process belongs to when its
// environment did not come down to it: MCP clients start their servers
// with a few variables only (the official TypeScript and Python clients
// pass HOME, LOGNAME, PATH, SHELL, TERM and USER), so jukebox mcp started
// by an agent under record or replay does not see JUKEBOX_CONTROL. The
// agent itself was started with it: the nearest ancestor whose
// environment (as it was exec'd, /proc/PID/environ) holds the control
// API's address and token is the run's. Linux only (elsewhere there is no
// /proc to read, and it finds nothing); it returns the ancestor's pid too.
func controlFromAncestors() (*controlapi.Client, int) {
	pid := os.Getppid()
	for i := 0; i < maxAncestors && pid > 1; i++ {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err == nil {
			base, token := environValue(env, controlapi.BaseEnv), environValue(env, controlapi.TokenEnv)
			if base != "" && token != "" {
				return &controlapi.Client{Base: base, Token: token}, pid
			}
		}
		if pid = parentOf(pid); pid == 0 {
			break
		}
	}
	return nil, 0
}

// environValue is name's value in a NUL-separated environment block.
func environValue(env []byte, name string) string {
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, ok := strings.CutPrefix(string(kv), name+"="); ok {
			return v
		}
	}
	return ""
}

// parentOf reads a process's parent from /proc/PID/status; 0 when it
// cannot.
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}
