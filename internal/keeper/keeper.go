package keeper

import "time"

// Env marks a process started as a keeper; its value is the grace after
// the first stop signal.
const Env = "JUKEBOX_KEEPER"

// Var is the environment entry that starts a keeper with grace.
func Var(grace time.Duration) string { return Env + "=" + grace.String() }
