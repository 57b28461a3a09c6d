package sandbox

import (
	"errors"
	"runtime"
)

// UnsupportedError reports a platform the booth cannot run on. It matches
// errors.ErrUnsupported.
type UnsupportedError struct {
	GOOS, GOARCH string
}

// Reason says what the booth needs and what this platform is, for a
// person (without the package prefix).
func (e *UnsupportedError) Reason() string {
	return "the Shadow Booth needs Linux (user and mount namespaces, overlayfs); this is " + e.GOOS + "/" + e.GOARCH
}

func (e *UnsupportedError) Error() string { return "sandbox: " + e.Reason() }

// Is makes errors.Is(err, errors.ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == errors.ErrUnsupported }

// Supported returns nil where the booth can run (Linux) and an
// *UnsupportedError elsewhere. Callers check it before offering the booth.
func Supported() error { return supportedOn(runtime.GOOS, runtime.GOARCH) }

// supportedOn is Supported for a given platform, so the answer for every
// platform can be tested on any.
func supportedOn(goos, goarch string) error {
	if goos == "linux" {
		return nil
	}
	return &UnsupportedError{GOOS: goos, GOARCH: goarch}
}
