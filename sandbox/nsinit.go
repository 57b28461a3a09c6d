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

// initEnv carries the init spec from the booth to its re-executed self.
const initEnv = "JUKEBOX_BOOTH_INIT"

// Exit codes of the namespace init when it fails before the command runs.
const (
	initSetupFailed = 125 // namespace or mount refused: caller falls back
	initExecFailed  = 127 // the command could not be started
)

// initSpec tells the init what to mount and run.
type initSpec struct {
	Lower string   `json:"lower"`          // the real workspace, mounted over
	Upper string   `json:"upper"`          // staging area (overlay upper dir)
	Work  string   `json:"work"`           // overlay work dir, same fs as Upper
	Hide  string   `json:"hide,omitempty"` // state root, covered by an empty tmpfs
	Dir   string   `json:"dir"`            // working directory of the command
	Args  []string `json:"args,omitempty"` // command; empty with Probe
	Probe bool     `json:"probe,omitempty"`
}

// MaybeRunInit runs the booth's namespace init when this process was
// re-executed as one, and then never returns: it mounts the overlay over
// the workspace inside its fresh user+mount namespace and execs the
// command. In any other process it returns at once. Call it first thing
// in main, before flags are parsed (and in TestMain of test binaries that
// run children in the booth).
func MaybeRunInit() {
	raw, ok := os.LookupEnv(initEnv)
	if !ok {
		return
	}
	os.Unsetenv(initEnv)
	os.Exit(runInit(raw))
}

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
