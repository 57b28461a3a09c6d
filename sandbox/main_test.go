//go:build linux

package sandbox

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	MaybeRunInit()
	crashChild()
	catalogueChild()
	nobodyChild()
	os.Exit(withStateHome(m))
}
