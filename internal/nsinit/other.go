//go:build !linux

package nsinit

import (
	"errors"
	"fmt"
	"os"
)

var errUnsupported = errors.New("the booth's namespace init needs Linux")

func run(string) int {
	fmt.Fprintf(os.Stderr, "jukebox: %v\n", errUnsupported)
	return SetupFailed
}
