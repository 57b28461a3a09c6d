//go:build !unix

package keeper

// MaybeRun does nothing here: Windows ends the agent's tree with a job
// object instead (engine/jobs_windows.go).
func MaybeRun() {}

// Available reports whether this process can start a keeper: never here.
func Available() bool { return false }
