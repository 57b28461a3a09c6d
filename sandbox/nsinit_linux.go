package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// runInit is the namespace init: it mounts what spec raw says and execs
// the command, reporting a failure before the exec on descriptor 3.
func runInit(raw string) int {
	report := os.NewFile(3, "booth-report")
	var s initSpec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		fmt.Fprintf(report, "setup: bad spec: %v", err)
		return initSetupFailed
	}
	if err := mountOverlay(s); err != nil {
		fmt.Fprintf(report, "setup: %v", err)
		return initSetupFailed
	}
	if s.Probe {
		return 0
	}
	if err := os.Chdir(s.Dir); err != nil {
		fmt.Fprintf(report, "setup: chdir: %v", err)
		return initSetupFailed
	}
	bin, err := exec.LookPath(s.Args[0])
	if err == nil {
		unix.CloseOnExec(3)
		err = syscall.Exec(bin, s.Args, os.Environ())
	}
	fmt.Fprintf(report, "exec: %v", err)
	return initExecFailed
}

// mountOverlay makes mounts private, mounts the overlay over the real
// workspace path and hides the booth's own state under an empty tmpfs.
func mountOverlay(s initSpec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", ovlEscape(s.Lower), ovlEscape(s.Upper), ovlEscape(s.Work))
	err := unix.Mount("overlay", s.Lower, "overlay", 0, opts+",userxattr")
	if err != nil { // kernels before 5.11 have no userxattr
		err = unix.Mount("overlay", s.Lower, "overlay", 0, opts)
	}
	if err != nil {
		return fmt.Errorf("mount overlayfs: %w", err)
	}
	if s.Hide == "" {
		return nil
	}
	if err := unix.Mount("tmpfs", s.Hide, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "size=4k,mode=0555"); err != nil {
		return fmt.Errorf("hide booth state: %w", err)
	}
	return nil
}

// ovlEscape escapes the characters overlayfs options treat specially.
func ovlEscape(p string) string {
	return strings.NewReplacer(`\`, `\\`, `,`, `\,`, `:`, `\:`).Replace(p)
}
