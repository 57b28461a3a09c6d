//go:build linux

package sandbox

import (
	"os"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

func TestMain(m *testing.M) {
	MaybeRunInit()
	UseInit(testenv.BoothInit())
	crashChild()
	catalogueChild()
	nestedChild()
	nobodyChild()
	testenv.PythonFirstOnPath()
	os.Exit(withStateHome(m))
}
