package engine

import (
	"cmp"
	_ "embed"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/jukebox-os/jukebox/internal/keeper"
	"github.com/jukebox-os/jukebox/internal/runca"
	"github.com/jukebox-os/jukebox/sandbox"
)

// ProxyEnv are the variables that point the agent's HTTP clients at
// jukebox's proxy, in both cases the runtimes read.
var ProxyEnv = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}

// NoProxyEnv name what the agent reaches directly: only jukebox's own
// endpoints. The user's own NO_PROXY is jukebox's, for its upstreams.
var NoProxyEnv = []string{"NO_PROXY", "no_proxy"}

// nodePreload is the Node.js preload written for each run
// (NODE_OPTIONS=--require); its configuration is put where the marker is.
//
//go:embed capture_preload.cjs
var nodePreload string

const preloadMarker = "/*JUKEBOX_CONFIG*/ { proxy: 'http://127.0.0.1:0', bypass: [] }"

// captureFiles are the files a run writes for its agent: the CA bundle it
// trusts and the Node.js preload, in a folder of their own, removed when
// the run ends.
type captureFiles struct {
	dir, bundle, preload string
	held                 *os.File      // the folder's lock, held while the run lives (holdRunFolder)
	swept                chan struct{} // closed when the sweep of its neighbours ended
}

// writeCaptureFiles writes the bundle and the preload for the agent.
func (s *session) writeCaptureFiles() error {
	dir, err := os.MkdirTemp(s.captureParent(), keeper.RunPrefix)
	if err == nil {
		// Certificates and the proxy's address only, nothing secret: an
		// agent the booth runs as another user reads them too.
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	f := &captureFiles{dir: dir, bundle: filepath.Join(dir, "ca-bundle.pem"), preload: filepath.Join(dir, "node-preload.cjs"),
		swept: make(chan struct{})}
	// The folders of runs killed before they removed theirs, beside this
	// one, go meanwhile (by the end of this run).
	go func() {
		defer close(f.swept)
		sweepRunFolders(filepath.Dir(dir))
	}()
	// The folder's lock and its two files are made at once: each waits on
	// the file system alone (a sweep never finds the folder unlocked while
	// the run lives: holdRunFolder).
	var wg sync.WaitGroup
	var preloadErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		f.held = holdRunFolder(dir)
	}()
	go func() {
		defer wg.Done()
		cfg, _ := json.Marshal(map[string]any{"proxy": s.proxy.url(), "bypass": s.endpoints()})
		preloadErr = os.WriteFile(f.preload, []byte(strings.Replace(nodePreload, preloadMarker, string(cfg), 1)), 0o644)
	}()
	roots := s.roots
	if roots == nil {
		roots = runca.ReadRoots(envMap(s.baseEnv()))
	}
	err = s.proxy.fwd.ca.WriteBundle(f.bundle, roots)
	wg.Wait()
	if err = cmp.Or(err, preloadErr); err != nil {
		f.remove()
		return err
	}
	s.files = f
	return nil
}

// remove removes the folder, then lets its lock go, once the sweep ended.
func (f *captureFiles) remove() {
	<-f.swept
	os.RemoveAll(f.dir)
	if f.held != nil {
		f.held.Close()
	}
}

// captureParent is the folder the capture files go in: the temporary
// folder, but /tmp in a booth when that is a place the booth gives the
// agent its own of, empty (TMPDIR=/dev/shm, or under /run): the agent
// would not find them there. The host's /tmp shows beneath the booth's.
func (s *session) captureParent() string {
	tmp := os.TempDir()
	if s.o.Booth != nil {
		for _, own := range []string{"/dev", "/run", "/var/run"} {
			if sandbox.Within(tmp, own) {
				return "/tmp"
			}
		}
	}
	return ""
}

// removeCaptureFiles removes what writeCaptureFiles wrote.
func (s *session) removeCaptureFiles() {
	if s.files != nil {
		s.files.remove()
	}
}

// endpoints are jukebox's own addresses the agent reaches directly, by
// address and as localhost.
func (s *session) endpoints() []string {
	var out []string
	for _, a := range append([]string{s.proxy.addr()}, s.mcpAddrs()...) {
		out = append(out, a)
		if _, port, err := net.SplitHostPort(a); err == nil {
			out = append(out, "localhost:"+port)
		}
	}
	return out
}

// captureEnv adds to set the variables that send every HTTP(S) request
// of the agent through the proxy, trusting the run's CA.
func (s *session) captureEnv(set, base map[string]string) {
	for _, name := range ProxyEnv {
		set[name] = s.proxy.url()
	}
	for _, name := range NoProxyEnv {
		set[name] = strings.Join(s.endpoints(), ",")
	}
	if s.files == nil {
		return
	}
	for _, name := range runca.BundleEnv {
		set[name] = s.files.bundle
	}
	set["NODE_OPTIONS"] = strings.TrimSpace(base["NODE_OPTIONS"] + " --require " + strconv.Quote(s.files.preload))
}
