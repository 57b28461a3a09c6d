package keeper

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"runtime"
	"sync"
	"time"
)

// Env marks a process started as a keeper; its value is the grace after
// the first stop signal.
const Env = "JUKEBOX_KEEPER"

// BuildEnv, when set, is the Fingerprint of the jukebox that starts the
// keeper: a keeper built from other source (a jukebox-booth left from
// another install) reports Mismatch and exits before it starts anything.
const BuildEnv = "JUKEBOX_KEEPER_BUILD"

// RemoveEnv, when set, is a folder of jukebox's run (its name begins
// with RunPrefix) that the keeper removes once the agent's tree has ended
// if jukebox died meanwhile (kill -9): jukebox removes it itself when it
// lives to the end.
const RemoveEnv = "JUKEBOX_KEEPER_REMOVE"

// WaitEnv, when set, starts a keeper ahead of its agent, while jukebox
// sets the run up: it reads what to start (Command, one line of JSON) from
// the lifeline, then keeps as any keeper does; a lifeline that closes
// first ends it, nothing started.
const WaitEnv = "JUKEBOX_KEEPER_WAIT"

// Command is what a waiting keeper starts: the agent's path (relative to
// Dir, or looked up already) and argv, its environment and folder, and the
// run's folder to remove if jukebox dies (as RemoveEnv).
type Command struct {
	Path   string   `json:"path"`
	Args   []string `json:"args"`
	Env    []string `json:"env"`
	Dir    string   `json:"dir,omitempty"`
	Remove string   `json:"remove,omitempty"`
}

// RunPrefix begins the name of every folder RemoveEnv may name.
const RunPrefix = "jukebox-run-"

// Mismatch is the report line, and the exit status, of a keeper built
// from other source than the jukebox that started it: jukebox then starts
// itself as the keeper instead.
const Mismatch = "mismatch"

// MismatchStatus is a mismatched keeper's exit status.
const MismatchStatus = 124

// Var is the environment entry that starts a keeper with grace.
func Var(grace time.Duration) string { return Env + "=" + grace.String() }

// BuildVar is the environment entry that makes a keeper check it was
// built from this source.
func BuildVar() string { return BuildEnv + "=" + Fingerprint() }

//go:embed *.go
var source embed.FS

// Fingerprint names the source this package was built from (its files and
// the Go release).
var Fingerprint = sync.OnceValue(func() string {
	h := sha256.New()
	h.Write([]byte(runtime.Version()))
	fs.WalkDir(source, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := source.ReadFile(p)
			fmt.Fprintf(h, "\x00%s\x00%d\x00", p, len(b))
			h.Write(b)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))
})
