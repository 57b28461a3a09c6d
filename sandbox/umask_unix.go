//go:build unix

package sandbox

import (
	"bufio"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
)

// umask is this process's file mode creation mask, read once from
// /proc/self/status (Linux 4.7 on); 022 where it cannot be read. It is
// not read with umask(2), which sets it too and races other threads.
var umask = sync.OnceValue(func() fs.FileMode {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0o022
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "Umask:"); ok {
			if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
				return fs.FileMode(m) & fs.ModePerm
			}
		}
	}
	return 0o022
})

// WASI preview 1 creates files and directories without a mode, and wazero
// asks for 0600 and 0700. A tool run outside the booth (wasmtime, say)
// gets what any program gets: 0666 and 0777 less the umask. So does the
// booth.
func wasiFilePerm() fs.FileMode { return 0o666 &^ umask() }
func wasiDirPerm() fs.FileMode  { return 0o777 &^ umask() }
