package sandbox

import "os"

// initEnv carries the init spec from the booth to its re-executed self.
const initEnv = "JUKEBOX_BOOTH_INIT"

// Exit codes of the namespace init when it fails before the command runs.
const (
	initSetupFailed = 125 // namespace or mount refused: caller falls back
	initExecFailed  = 127 // the command could not be started
)

// initSpec tells the init what to mount and run.
type initSpec struct {
	Lower string   `json:"lower"`          // the real workspace, mounted over
	Upper string   `json:"upper"`          // staging area (overlay upper dir)
	Work  string   `json:"work"`           // overlay work dir, same fs as Upper
	Hide  string   `json:"hide,omitempty"` // state root, covered by an empty tmpfs
	Dir   string   `json:"dir"`            // working directory of the command
	Args  []string `json:"args,omitempty"` // command; empty with Probe
	Probe bool     `json:"probe,omitempty"`
}

// MaybeRunInit runs the booth's namespace init when this process was
// re-executed as one, and then never returns: it mounts the overlay over
// the workspace inside its fresh user+mount namespace and execs the
// command. In any other process it returns at once. Call it first thing
// in main, before flags are parsed (and in TestMain of test binaries that
// run children in the booth).
func MaybeRunInit() {
	raw, ok := os.LookupEnv(initEnv)
	if !ok {
		return
	}
	os.Unsetenv(initEnv)
	os.Exit(runInit(raw))
}
