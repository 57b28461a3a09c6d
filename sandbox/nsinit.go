package sandbox

import "os"

// initEnv turns this binary into the booth's namespace init (see
// MaybeRunInit); its value is the spec, as JSON.
const initEnv = "JUKEBOX_BOOTH_INIT"

// Exit codes of the namespace init when it fails before the command runs.
const (
	initSetupFailed = 125 // namespace or mount refused: caller falls back
	initExecFailed  = 127 // the command could not be started
)

// initSpec tells the init what to mount and run.
type initSpec struct {
	Lower string `json:"lower"` // the real workspace, mounted over
	Upper string `json:"upper"` // staging area (overlay upper dir)
	Work  string `json:"work"`  // overlay work dir, same fs as Upper
	// Staged are more folders mounted copy-on-write, as the workspace is
	// (Tx.StageRoot).
	Staged []stagedMount `json:"staged,omitempty"`
	Hide   []string      `json:"hide,omitempty"` // state root, key folder: each covered by an empty tmpfs
	Dir    string        `json:"dir"`            // working directory of the command
	Args   []string      `json:"args,omitempty"` // command; empty with Probe
	Probe  bool          `json:"probe,omitempty"`
	// ReadOnly paths stay visible at their own absolute paths, read-only,
	// even inside the workspace or under the private /tmp (the tape's
	// folder). WriteLive paths stay visible and writable: writes there are
	// not staged.
	ReadOnly  []string `json:"read_only,omitempty"`
	WriteLive []string `json:"write_live,omitempty"`
	// NetNone: the init runs in a new network namespace, and Relays are
	// the loopback endpoints it serves inside, each forwarded to a unix
	// socket outside (the recorder, the control API, the --pg endpoint).
	NetNone bool    `json:"net_none,omitempty"`
	Relays  []relay `json:"relays,omitempty"`
	// UID and GID are the caller's, which the command runs as.
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// stagedMount is an overlay over Lower whose upper dir is Upper.
type stagedMount struct {
	Lower string `json:"lower"`
	Upper string `json:"upper"`
	Work  string `json:"work"`
}

// relay forwards connections to Addr (127.0.0.1:PORT inside the network
// namespace) to the unix socket Socket, served outside.
type relay struct {
	Addr   string `json:"addr"`
	Socket string `json:"socket"`
}

// MaybeRunInit runs the booth's namespace init when this process was
// re-executed as one, and then never returns. The init is PID 1 of a new
// PID namespace, with every capability of a new user namespace in which
// it is the caller's own uid: it builds the confined mount tree (the
// overlay over the workspace, a private /tmp and /dev/shm, everything
// else read-only), then starts the command from a thread that has set
// no_new_privs, dropped those capabilities and loaded the seccomp filter,
// and reaps until the command ends. In any other process MaybeRunInit
// returns at once. Call it first thing in main, before flags are parsed
// (and in TestMain of test binaries that run children in the booth).
func MaybeRunInit() {
	raw, ok := os.LookupEnv(initEnv)
	if !ok {
		return
	}
	os.Unsetenv(initEnv)
	os.Exit(runInit(raw))
}
