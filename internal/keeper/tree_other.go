//go:build unix && !linux

package keeper

// native is the keeper of systems without a child subreaper: the
// agent's process group (group).
func native() tree { return &group{} }
