package nsinit

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// execFailure is the report of a command that could not start: what
// failed, then, where a path was not found, MissingPrefix and that path.
// A script whose interpreter (its #! line) is missing fails to exec with
// ENOENT as if the script were; the interpreter is named.
func execFailure(arg0, bin string, err error) string {
	var ee *exec.Error
	if errors.As(err, &ee) && errors.Is(ee.Err, exec.ErrNotFound) {
		return fmt.Sprintf("exec: %s: not found in PATH (%s)", arg0, os.Getenv("PATH"))
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && errors.Is(pe.Err, fs.ErrNotExist) {
		return fmt.Sprintf("exec: %s: %v", pe.Path, pe.Err) + MissingPrefix + pe.Path
	}
	if !errors.Is(err, syscall.ENOENT) || bin == "" {
		return fmt.Sprintf("exec: %s: %v", arg0, err)
	}
	if interp := interpreter(bin); interp != "" {
		if _, serr := os.Stat(interp); serr != nil {
			return fmt.Sprintf("exec: %s: its interpreter (#! line) %s: %v", bin, interp, serr) + MissingPrefix + interp
		}
	}
	return fmt.Sprintf("exec: %s: %v (its interpreter or dynamic loader is not there)", bin, err)
}

// interpreter is the program a script's #! line names, or "".
func interpreter(bin string) string {
	f, err := os.Open(bin)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, _ := f.Read(buf)
	line, ok := bytes.CutPrefix(buf[:n], []byte("#!"))
	if !ok {
		return ""
	}
	line, _, _ = bytes.Cut(line, []byte("\n"))
	if fields := strings.Fields(string(line)); len(fields) > 0 {
		return fields[0]
	}
	return ""
}
