package main

import (
	"fmt"

	"github.com/jukebox-os/jukebox/engine"
)

// liveFlags name the hosts a replay or a fork lets through live: replay is
// closed-world otherwise (a request the tape does not hold is a
// divergence, and nothing is sent).
type liveFlags struct {
	Live []string `placeholder:"HOST[,HOST...]" help:"Let requests to these hosts through live (recorded on -o's tape when there is one), never matched against the tape; globs such as *.githubusercontent.com; HOST:PORT for one port. Every other request the tape does not hold is a divergence and never leaves the machine. Repeatable."`
}

// liveHosts are the patterns --live gives.
func (f liveFlags) liveHosts() (engine.HostPatterns, error) {
	h, err := engine.ParseHostPatterns(f.Live)
	if err != nil {
		return nil, fmt.Errorf("--live %w", err)
	}
	return h, nil
}
