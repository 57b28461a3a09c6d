//go:build unix

package testenv

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// PidFile waits, up to 30 seconds, for the process id a test's agent
// writes to path (whole: written to a temporary name and renamed).
func PidFile(t testing.TB, path string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no process id was written to %s", path)
	return 0
}

// Gone waits, up to within, for pid to be gone (a zombie counts). When
// it is still there it is killed, and Gone reports false.
func Gone(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			if _, err := os.Stat("/proc/self/stat"); err == nil || syscall.Kill(pid, 0) != nil {
				return true // no such process (or no /proc, and the kernel says so)
			}
		} else if i := strings.LastIndexByte(string(b), ')'); i > 0 && strings.HasPrefix(string(b[i+1:]), " Z") {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	return false
}
