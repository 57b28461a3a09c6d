//go:build !linux

package keeper

// MaybeRun does nothing here: the keeper is Linux's.
func MaybeRun() {}

// Available reports whether this process can start a keeper: never here.
func Available() bool { return false }
