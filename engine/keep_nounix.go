//go:build !unix

package engine

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/jukebox-os/jukebox/internal/keeper"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// kept is the keeper of an agent's tree, which Unix systems have
// (Windows ends the tree with a job object, jobs_windows.go): elsewhere
// keepUnder returns nil and every method of a nil *kept does nothing.
type kept struct{}

func keepUnder(*exec.Cmd, time.Duration, bool, string) *kept { return nil }
func (*kept) started() error                                 { return nil }

// errKeeperMismatch is never returned here.
var errKeeperMismatch = errors.New("no keeper")

func (*kept) end()                        {}
func (*kept) settle(*tapefmt.RunEnd, int) {}

// prekept is a keeper started ahead of its agent, which Unix systems
// have: preKeep returns nil here.
type prekept struct {
	cmd   *exec.Cmd
	k     *kept
	pipes [2]*os.File
}

func preKeep(io.Reader, time.Duration) *prekept { return nil }
func (*prekept) hand(keeper.Command) error      { return errKeeperGone }
func (*prekept) release()                       {}

// errKeeperGone is never returned here.
var errKeeperGone = errors.New("no keeper")
