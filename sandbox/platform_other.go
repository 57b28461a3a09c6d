//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"os"

	"github.com/jukebox-os/jukebox/internal/nsinit"
)

// Stubs for the pieces only Linux has. Begin, Open, List and Recover
// refuse with Supported's error first, so these run only if something
// skipped that check, and then they fail with the same error.

func runInitChild(context.Context, nsinit.Spec, ExecOptions, func(int)) (ExecResult, error) {
	return ExecResult{ExitCode: -1}, fmt.Errorf("%w: %v", errNoUserNS, Supported())
}

func overlayView(int, string) (*os.Root, error) { return nil, Supported() }

func hostNet(string, ExecOptions, *nsinit.Spec) (func(), error) { return func() {}, Supported() }

func syncFS(int) error { return Supported() }

func cloneFile(_, _ *os.File) error { return Supported() }
