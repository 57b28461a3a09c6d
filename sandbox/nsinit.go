package sandbox

import (
	"github.com/jukebox-os/jukebox/internal/keeper"
	"github.com/jukebox-os/jukebox/internal/nsinit"
)

// MaybeRunInit runs the booth's namespace init when this process was
// started as one (nsinit.MaybeRun), and then never returns; in any other
// process it returns at once. Call it first thing in main, before flags
// are parsed (and in TestMain of test binaries that run children in the
// booth): a booth starts this executable as its init when jukebox-booth
// is not installed beside it (nsinit.Path).
//
// It also runs a copy run's reaper (copyreap_linux.go) when this process
// was started as one, and the keeper of an agent run outside the booth
// (internal/keeper).
func MaybeRunInit() {
	keeper.MaybeRun()
	maybeRunReaper()
	nsinit.MaybeRun()
}

// UseInit makes booths start init, a jukebox-booth built from this
// source, as their namespace init instead of looking beside this
// executable; "" changes nothing. Test binaries call it from TestMain
// with testenv.BoothInit.
func UseInit(init string) {
	if init != "" {
		nsinit.Use(init)
	}
}
