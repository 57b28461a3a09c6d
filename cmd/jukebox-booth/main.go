// Command jukebox-booth is the Shadow Booth's namespace init as a small
// executable of its own. Installed beside jukebox (go install
// github.com/jukebox-os/jukebox/cmd/...), it is what `jukebox record
// --booth` starts as PID 1 of the booth: it starts in a few milliseconds,
// where jukebox itself, which would otherwise be started again, takes
// tens. It does nothing run by hand.
package main

import (
	"github.com/jukebox-os/jukebox/internal/keeper"
	"github.com/jukebox-os/jukebox/internal/nsinit"
)

func main() {
	keeper.MaybeRun() // a test's agent keeper (nsinit.Chosen), then the init
	nsinit.Main()
}
