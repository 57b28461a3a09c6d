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
	nestedChild()
	nobodyChild()
	os.Exit(withStateHome(m))
}
