// Package nsinit is the Shadow Booth's namespace init: PID 1 of the
// booth's namespaces, which builds the confined mount tree and starts the
// agent without the capabilities it used for that (see MaybeRun). It is a
// leaf, kept small, because it is also a program of its own,
// jukebox-booth (cmd/jukebox-booth), installed beside jukebox: starting
// that small executable takes a few milliseconds where re-executing
// jukebox itself takes tens (a Go program's start is mostly the page
// faults of its binary and the inits of every package it links). Path
// says which one a booth starts.
package nsinit

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"sync"
)

// Env turns this binary into the booth's namespace init (see
// MaybeRun); its value is the spec, as JSON.
const Env = "JUKEBOX_BOOTH_INIT"

// Exit codes of the namespace init when it fails before the command runs.
const (
	Mismatch    = 124 // built from other source than the caller: start the caller again instead
	SetupFailed = 125 // namespace or mount refused: the caller refuses to run the command unconfined
	ExecFailed  = 127 // the command could not be started
)

// MissingPrefix starts the line of an exec failure's report that names the
// path that was not there (the command, or its script's interpreter), for
// the caller to say what the booth shows at that path.
const MissingPrefix = "\nmissing: "

// Spec tells the init what to mount and run.
type Spec struct {
	Lower string `json:"lower"` // the real workspace, mounted over
	Upper string `json:"upper"` // staging area (overlay upper dir)
	Work  string `json:"work"`  // overlay work dir, same fs as Upper
	// Staged are more folders mounted copy-on-write, as the workspace is
	// (Tx.StageRoot).
	Staged []Staged `json:"staged,omitempty"`
	Hide   []string `json:"hide,omitempty"` // state root, key folder: each covered by an empty tmpfs
	// TmpUpper is an empty folder the init mounts a tmpfs on, in the
	// booth's mount namespace alone: the upper layer of the booth's /tmp,
	// over the host's (privateTmp).
	TmpUpper string `json:"tmp_upper"`
	// TmpShared are the folders of the host's /tmp, parents first, that
	// the init makes in the upper layer of the booth's /tmp before it
	// mounts it (SharedTmp).
	TmpShared []TmpFolder `json:"tmp_shared,omitempty"`
	Dir       string      `json:"dir"`            // working directory of the command
	Args      []string    `json:"args,omitempty"` // command; empty with Probe
	Probe     bool        `json:"probe,omitempty"`
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
	Relays  []Relay `json:"relays,omitempty"`
	// Resolv is a resolv.conf naming DNSAddr, mounted over the host's
	// under NetNone. Carry is the unix socket, served outside, that takes
	// the agent's plain TCP connections to the names the booth's resolver
	// answered, each preceded by a line "HOST PORT"; "" refuses them
	// (--hermetic).
	Resolv string `json:"resolv,omitempty"`
	Carry  string `json:"carry,omitempty"`
	// UID and GID are the caller's, which the command runs as.
	UID int `json:"uid"`
	GID int `json:"gid"`
	// Build is the caller's Fingerprint: an init built from other source
	// exits with Mismatch before it does anything.
	Build string `json:"build"`
}

// TmpFolder is a folder of the host's /tmp: its path below /tmp and its
// mode (permissions, with the sticky and setgid bits as chmod takes them).
type TmpFolder struct {
	Path string `json:"path"`
	Mode uint32 `json:"mode"`
}

// Staged is an overlay over Lower whose upper dir is Upper.
type Staged struct {
	Lower string `json:"lower"`
	Upper string `json:"upper"`
	Work  string `json:"work"`
}

// Relay forwards connections to Addr (127.0.0.1:PORT inside the network
// namespace) to the unix socket Socket, served outside.
type Relay struct {
	Addr   string `json:"addr"`
	Socket string `json:"socket"`
}

// Refusal is a connection a --net none booth refused.
type Refusal struct {
	Family string `json:"family"` // ipv4 or ipv6
	Addr   string `json:"addr"`   // host:port
	Errno  string `json:"errno"`  // the error the agent got, e.g. ENETUNREACH
	// Host is the name the booth's resolver gave Addr, when it did.
	Host string `json:"host,omitempty"`
	// Hermetic: a plain TCP connection to Host, refused because the booth
	// carries none (Spec.Carry is ""). UDP: a datagram socket connected
	// to Host, which the booth cannot carry. Otherwise a connection to a
	// named host was refused because it went to an HTTP port (80, 443)
	// directly rather than through jukebox's proxy.
	Hermetic bool `json:"hermetic,omitempty"`
	UDP      bool `json:"udp,omitempty"`
}

// MaybeRun runs the booth's namespace init when this process was
// re-executed as one, and then never returns. The init is PID 1 of a new
// PID namespace, with every capability of a new user namespace in which
// it is the caller's own uid: it builds the confined mount tree (the
// overlay over the workspace, a private /tmp and /dev/shm, everything
// else read-only), then starts the command from a thread that has set
// no_new_privs, dropped those capabilities and loaded the seccomp filter,
// and reaps until the command ends. In any other process MaybeRun
// returns at once. Call it first thing in main, before flags are parsed
// (and in TestMain of test binaries that run children in the booth).
func MaybeRun() {
	raw, ok := os.LookupEnv(Env)
	if !ok {
		return
	}
	os.Unsetenv(Env)
	os.Exit(run(raw))
}

// Main is the whole of jukebox-booth: the init, or a word on what it is.
func Main() {
	MaybeRun()
	fmt.Fprintln(os.Stderr, "jukebox-booth is the Shadow Booth's namespace init: jukebox starts it for `record --booth`, with its spec in "+Env+"; it does nothing run by hand")
	os.Exit(2)
}

//go:embed *.go
var source embed.FS

// Fingerprint names the source this package was built from (its files
// and the Go release), so that jukebox starts only a jukebox-booth built
// from the same: one left behind by an older install would confine the
// agent by older rules.
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
