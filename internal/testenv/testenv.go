// Package testenv decides, in one place, whether a test can find what it
// needs outside Go: Node.js and the npm SDK packages, python3, tmux, a
// PostgreSQL server, a Jaeger receiver, kernel features such as
// namespaces.
//
// A plain `go test ./...` on a machine with only Go installed passes: a
// test whose dependency is missing is skipped with a reason that names
// what is missing and how to get it, for example
//
//	needs tmux on PATH (a real terminal for the end-to-end test): install tmux, or run bash .ci/test
//
// With JUKEBOX_REQUIRE_ALL=1 (set by .ci/test) the same helpers fail the
// test instead, so CI cannot pass by skipping.
//
// JUKEBOX_SKIP_SDK=1 is an explicit opt-out of the npm SDK agents. It is
// honoured only when JUKEBOX_REQUIRE_ALL is unset; with both set the
// SDK tests fail, since the two ask for opposite things.
package testenv

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Environment variables the helpers read.
const (
	// envRequireAll, set to 1, turns every skip for a missing dependency
	// into a failure.
	envRequireAll = "JUKEBOX_REQUIRE_ALL"
	// envSkipSDK, set to 1, skips the tests that run the npm SDK agents.
	envSkipSDK = "JUKEBOX_SKIP_SDK"
	// EnvPostgresDSN holds the DSN of the scratch PostgreSQL server that
	// `eval "$(bash .ci/postgres.sh)"` starts.
	EnvPostgresDSN = "JUKEBOX_PG_DSN"
	// EnvJaeger holds the path of the Jaeger v2 binary that
	// `eval "$(bash .ci/jaeger.sh)"` builds from the tools module.
	EnvJaeger = "JUKEBOX_JAEGER"
	// EnvVersityGW holds the path of the Versity S3 Gateway binary that
	// .ci/versitygw.sh builds: the S3-compatible server of the store tests.
	EnvVersityGW = "JUKEBOX_VERSITYGW"
	// EnvFakeGCS holds the path of the fake-gcs-server binary that
	// .ci/fakegcs.sh builds: the Google Cloud Storage emulator of the
	// store tests.
	EnvFakeGCS = "JUKEBOX_FAKEGCS"
	// EnvDuckQ holds the path of duckq that .ci/duckdb.sh builds: DuckDB,
	// which the Parquet export tests query the files with.
	EnvDuckQ = "JUKEBOX_DUCKQ"
)

// minNodeMajor is the oldest Node.js release the SDK agents run on
// (testdata/agents/package.json, "engines").
const minNodeMajor = 20

// requireAll reports whether JUKEBOX_REQUIRE_ALL=1 is set.
func requireAll() bool { return os.Getenv(envRequireAll) == "1" }

// Unavailable stops the test because something it needs is missing: a
// skip, or a failure under JUKEBOX_REQUIRE_ALL=1. The message reads
// "needs WHAT: HOW".
func Unavailable(t testing.TB, what, how string) {
	t.Helper()
	msg := "needs " + what + ": " + how
	if requireAll() {
		t.Fatalf("%s (%s=1 makes this a failure)", msg, envRequireAll)
	}
	t.Skip(msg)
}

// Short skips a test that is slow by nature (it builds the binary, it
// spawns a process per step) in -short mode, saying why. -short with
// JUKEBOX_REQUIRE_ALL=1 fails it: the two ask for opposite things.
func Short(t testing.TB, why string) {
	t.Helper()
	if !testing.Short() {
		return
	}
	if requireAll() {
		t.Fatalf("skipped in -short mode (%s), but %s=1 asks for every test", why, envRequireAll)
	}
	t.Skip("skipped in -short mode: " + why)
}

// RequireNode returns the absolute path of testdata/agents, the npm SDK
// agents' directory, after checking that Node.js 20 or newer is on PATH
// and that the official openai and @anthropic-ai/sdk packages are
// installed there. JUKEBOX_SKIP_SDK=1 skips (see the package doc).
func RequireNode(t testing.TB) string {
	t.Helper()
	if os.Getenv(envSkipSDK) == "1" {
		if requireAll() {
			t.Fatalf("%s=1 skips the npm SDK agents, but %s=1 requires every test to run", envSkipSDK, envRequireAll)
		}
		t.Skipf("%s=1 skips the npm SDK agents", envSkipSDK)
	}
	if err := nodeVersion(); err != nil {
		Unavailable(t, fmt.Sprintf("Node.js %d or newer on PATH%s", minNodeMajor, why(err)),
			"install Node.js and npm, then run bash .ci/setup-node.sh (or set "+envSkipSDK+"=1)")
	}
	agents := filepath.Join(repoRoot(t), "testdata", "agents")
	for _, pkg := range []string{"openai", "@anthropic-ai/sdk", "@modelcontextprotocol/sdk", "@modelcontextprotocol/server-everything", "@modelcontextprotocol/server-filesystem", "azurite"} {
		if _, err := os.Stat(filepath.Join(agents, "node_modules", pkg, "package.json")); err != nil {
			Unavailable(t, "the npm SDK packages in testdata/agents/node_modules",
				"run bash .ci/setup-node.sh (or set "+envSkipSDK+"=1)")
		}
	}
	return agents
}

// why is " (err)", or "" when err says only that the program is not on
// PATH, which the message already says.
func why(err error) string {
	if errors.Is(err, exec.ErrNotFound) {
		return ""
	}
	return " (" + err.Error() + ")"
}

var nodeVersion = sync.OnceValue(func() error {
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		return err
	}
	v := strings.TrimSpace(string(out))
	major, _, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	if n, err := strconv.Atoi(major); err != nil || n < minNodeMajor {
		return fmt.Errorf("found %s", v)
	}
	return nil
})

// RequirePython returns the python3 interpreter to run. It is the
// interpreter's own path (sys.executable), so that a version manager's
// shim on PATH, such as pyenv's, is paid for once per test binary rather
// than on every start of an agent.
func RequirePython(t testing.TB) string {
	t.Helper()
	path, err := python()
	if err != nil {
		Unavailable(t, "python3 on PATH"+why(err), "install Python 3 (the Debian package python3)")
	}
	return path
}

var python = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		return "", err
	}
	path := strings.TrimSpace(string(out))
	if _, err := os.Stat(path); err != nil {
		return exec.LookPath("python3") // sys.executable may be empty or unusable
	}
	return path, nil
})

// PythonFirstOnPath puts the folder of RequirePython's interpreter first
// on PATH when python3 on PATH is a script: a version manager's shim
// (pyenv's costs about 0.4 s a start, the interpreter 0.03 s). Agents that
// tests start as "python3", such as the demo's, then start at the
// interpreter's cost, as the shim would have them run the same one. For
// TestMain, before m.Run; it does nothing where python3 is the interpreter.
func PythonFirstOnPath() {
	if path := pythonFirst(python); path != "" {
		os.Setenv("PATH", path)
	}
}

// pythonFirst is the PATH that PythonFirstOnPath sets, with real the
// interpreter's path, or "" to leave PATH as it is.
func pythonFirst(real func() (string, error)) string {
	found, err := exec.LookPath("python3")
	if err != nil {
		return ""
	}
	f, err := os.Open(found)
	if err != nil {
		return ""
	}
	head := make([]byte, 2)
	_, err = io.ReadFull(f, head)
	f.Close()
	if err != nil || string(head) != "#!" {
		return ""
	}
	interp, err := real()
	if err != nil || interp == found {
		return ""
	}
	return filepath.Dir(interp) + string(os.PathListSeparator) + os.Getenv("PATH")
}

// RequirePythonModule returns a python3 interpreter that can import
// module (and the more modules): RequirePython's, else the first other
// python3 on PATH that can (a version manager's interpreter may lack a
// package the system's has).
func RequirePythonModule(t testing.TB, module string, more ...string) string {
	t.Helper()
	var cands []string
	if p, err := python(); err == nil {
		cands = append(cands, p)
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		cands = append(cands, filepath.Join(dir, "python3"))
	}
	mods := append([]string{module}, more...)
	for _, c := range cands {
		if exec.Command(c, "-c", "import "+strings.Join(mods, ", ")).Run() == nil {
			return c
		}
	}
	if len(more) > 0 {
		Unavailable(t, "python3 with the modules "+strings.Join(mods, ", "),
			"install the Debian packages python3-"+strings.Join(mods, " python3-")+", or run bash .ci/test")
	}
	Unavailable(t, "python3 with the module "+module, "install the Debian package python3-"+module+", or run bash .ci/test")
	return ""
}

// RequireTmux returns the path of tmux, which the end-to-end tests use as
// a real terminal.
func RequireTmux(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("tmux")
	if err != nil {
		Unavailable(t, "tmux on PATH (a real terminal for the end-to-end test)", "install tmux")
	}
	return path
}

// RequirePostgres returns the DSN of the scratch PostgreSQL server in
// JUKEBOX_PG_DSN. A test that then cannot reach the server fails: the
// variable is a promise that one runs.
func RequirePostgres(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvPostgresDSN)
	if dsn == "" {
		Unavailable(t, "a PostgreSQL server in "+EnvPostgresDSN,
			`run eval "$(bash .ci/postgres.sh)" to start a scratch server and set it`)
	}
	return dsn
}

// RequireJaeger returns the path of the Jaeger v2 binary in
// JUKEBOX_JAEGER, the real OTLP receiver of the export tests.
func RequireJaeger(t testing.TB) string {
	t.Helper()
	return requireTool(t, EnvJaeger, "Jaeger v2 (an OTLP receiver)", "jaeger.sh")
}

// RequireVersityGW returns the path of the Versity S3 Gateway binary in
// JUKEBOX_VERSITYGW, the real S3-compatible server of the store tests.
func RequireVersityGW(t testing.TB) string {
	t.Helper()
	return requireTool(t, EnvVersityGW, "the Versity S3 Gateway (an S3-compatible server)", "versitygw.sh")
}

// RequireFakeGCS returns the path of the fake-gcs-server binary in
// JUKEBOX_FAKEGCS, the Google Cloud Storage emulator of the store tests.
func RequireFakeGCS(t testing.TB) string {
	t.Helper()
	return requireTool(t, EnvFakeGCS, "fake-gcs-server (a Google Cloud Storage emulator)", "fakegcs.sh")
}

// RequireDuckDB returns the path of duckq in JUKEBOX_DUCKQ: SQL run by
// DuckDB's Go bindings (.ci/tools/duckq), printed as JSON, one line per
// statement.
func RequireDuckDB(t testing.TB) string {
	t.Helper()
	return requireTool(t, EnvDuckQ, "duckq (DuckDB, to query Parquet files)", "duckdb.sh")
}

// requireTool returns the path in the environment variable env of a
// program of the tools module that .ci/SCRIPT builds.
func requireTool(t testing.TB, env, what, script string) string {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		Unavailable(t, what+" in "+env,
			`run eval "$(bash .ci/`+script+`)" to build it from the tools module and set it`)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s=%s: %v (run bash .ci/%s again)", env, path, err, script)
	}
	return path
}

// EnvBinDir names a folder holding jukebox and jukebox-booth built from
// this tree (.ci/test builds them once for every test that needs them).
const EnvBinDir = "JUKEBOX_BIN_DIR"

// Binaries returns a folder holding the jukebox and jukebox-booth
// binaries of this tree: JUKEBOX_BIN_DIR's, else built for this test (a
// minute, cold). Tests must not change what is in it.
func Binaries(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(EnvBinDir); dir != "" {
		for _, name := range []string{"jukebox", "jukebox-booth"} {
			if _, err := os.Stat(filepath.Join(dir, name+exeSuffix())); err != nil {
				t.Fatalf("%s=%s: %v (build them with go build -o DIR/ ./cmd/...)", EnvBinDir, dir, err)
			}
		}
		return dir
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/...")
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/...: %v\n%s", err, out)
	}
	return dir
}

// BoothInit returns the jukebox-booth of JUKEBOX_BIN_DIR when it is set
// and this process can read it, else "": the init in-process booths start
// (sandbox.UseInit), so that they do not start the test binary again.
func BoothInit() string {
	dir := os.Getenv(EnvBinDir)
	if dir == "" {
		return ""
	}
	p := filepath.Join(dir, "jukebox-booth"+exeSuffix())
	f, err := os.Open(p) // as another user (nobody), the folder may be closed
	if err != nil {
		return ""
	}
	f.Close()
	return p
}

func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}

// RepoRoot returns the repository's root directory, for a test that
// reads a file of another package (a config in testdata).
func RepoRoot(t testing.TB) string { return repoRoot(t) }

// repoRoot returns the repository's root directory: the nearest parent of
// the test's working directory (its package directory) with a go.mod.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := findRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

var findRepoRoot = sync.OnceValues(func() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: no go.mod above the working directory")
		}
		dir = parent
	}
})

// FreePort is a TCP port on 127.0.0.1 that was free a moment ago, for a
// server a test starts (Jaeger, the S3 gateway).
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// SelfAt puts the running test binary at path, for a test that runs it
// where its build folder cannot be reached (as another user, inside a
// booth's private /tmp): a hard link where it can (the same file system),
// else a copy. A copy can fail to start with "text file busy" while a
// parallel test's fork still holds the copy's write descriptor (a CI run
// saw it); a link is never open for writing.
func SelfAt(t testing.TB, path string) {
	t.Helper()
	if exe, err := os.Executable(); err == nil && os.Link(exe, path) == nil {
		return
	}
	self, err := os.ReadFile("/proc/self/exe")
	if err == nil {
		err = os.WriteFile(path, self, 0o755)
	}
	if err != nil {
		t.Fatalf("the test binary at %s: %v", path, err)
	}
}
