//go:build !linux

package sandbox

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
)

// The copy fallback's kernel pieces, for the platforms where the booth
// does not run (see platform_other.go): they build, and copy plainly.

func copyData(out, in *os.File, _ fs.FileInfo) error {
	_, err := io.Copy(out, in)
	return err
}

func copyRegular(from, to string, fi fs.FileInfo, _ bool) (copyStamp, bool, error) {
	if err := copyFile(from, to, fi.Mode()); err != nil {
		return copyStamp{}, false, err
	}
	got, err := os.Lstat(to)
	if err != nil {
		return copyStamp{}, false, err
	}
	return stampOf(got), false, nil
}

func fingerprintOf(string, fs.FileInfo) (fingerprint, bool) { return fingerprint{}, false }

var errPlaceBusy = errors.New("in use")

func lockPlace(string) (*os.File, error) { return nil, Supported() }
func sameDevice(_, _ string) bool        { return false }
func dieWithUs(*exec.Cmd)                {}

func exitStatus(err error) (int, int, error) {
	code, err := exitCode(err)
	return code, 0, err
}

// terminalSent: where the booth does not run, nothing is passed on twice.
func terminalSent(os.Signal) bool { return false }
