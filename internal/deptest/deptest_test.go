package deptest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

const module = "github.com/jukebox-os/jukebox"

// layers are the module's packages from the bottom up: a package imports
// only packages of layers below its own. ARCHITECTURE.md lists the same.
var layers = [][]string{
	{"tapefmt", "themes", "internal/termtext", "internal/nsinit", "internal/runca",
		"sandbox/pgtx", "internal/testenv", "internal/llmsim", "internal/demo", "internal/inproc",
		"internal/testsum", "internal/deptest", "internal/doccheck", "internal/keeper", "internal/gitref", "internal/otlpwire", "internal/kong", "internal/syncio", "internal/parquetw", "internal/termquiet"},
	{"prices", "diffview", "sidecar", "mcp", "breaker", "sandbox", "redact", "internal/tapetest",
		"internal/s3test", "internal/gcstest", "internal/azuretest", "internal/pgtest", "internal/jaegertest"},
	{"llmwire", "reqmatch", "controlapi", "sandbox/pgbooth", "internal/tapegen"},
	{"engine", "timeline", "export", "internal/tapegen/gen"},
	{"tui", "tapestore", "engine/jukeboxtest", "export/tables"},
	{"cmd/jukebox", "cmd/jukebox-booth"},
}

// neverDirect are imports a package's own files must not make: tui reads
// tapes only through timeline.
var neverDirect = [][2]string{
	{"tui", module + "/tapefmt"},
}

// never are imports that must not happen, directly or through another
// package: from a package of the module to a package path (of the module
// or not; a path ending in "/" stands for everything under it).
var never = [][2]string{
	{"tapefmt", module + "/"},
	{"engine", module + "/timeline"},
	{"engine", module + "/tui"},
	{"engine", module + "/export"},
	{"export", module + "/engine"},
	{"timeline", module + "/engine"},
	{"timeline", module + "/tapestore"},
	{"sandbox", module + "/engine"},
	{"controlapi", module + "/engine"},
	{"engine", "github.com/charmbracelet/"},
	{"timeline", "github.com/charmbracelet/"},
	{"engine", module + "/internal/kong"},
	{"timeline", module + "/internal/kong"},
	{"tui", module + "/internal/kong"},
	{"export", "google.golang.org/grpc/"},
	{"internal/otlpwire", "google.golang.org/grpc/"},
	{"export", "go.opentelemetry.io/otel/exporters/"},
}

// neverByDefault are modules the default build of jukebox leaves out:
// their drivers are opt-in build tags (tapestore), which alone bring
// gocloud.dev/blob and, with it, gRPC; and the protobuf runtime and
// parquet-go, whose package initialisation every start paid (OTLP and
// Parquet are written by internal/otlpwire and internal/parquetw).
var neverByDefault = []string{"cloud.google.com/go/storage", "github.com/Azure/azure-sdk-for-go/", "gocloud.dev/blob", "google.golang.org/grpc/",
	"google.golang.org/protobuf/", "github.com/parquet-go/"}

// TestLayers: every package of the module has a layer, and imports only
// packages of the layers below its own.
func TestLayers(t *testing.T) {
	layer := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			layer[p] = i
		}
	}
	for _, p := range list(t, nil, "./...") {
		name := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		l, ok := layer[name]
		if !ok {
			t.Errorf("%s has no layer: place it in ARCHITECTURE.md's import rules and in this test's table", name)
			continue
		}
		for _, imp := range p.Imports {
			in, ok := strings.CutPrefix(imp, module+"/")
			if ok && layer[in] >= l {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports point down only", name, l, in, layer[in])
			}
		}
	}
}

// TestNever: none of the imports that must never happen does, directly
// or through another package.
func TestNever(t *testing.T) {
	deps, imports := map[string][]string{}, map[string][]string{}
	for _, p := range list(t, nil, "./...") {
		name := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		deps[name], imports[name] = p.Deps, p.Imports
	}
	check := func(rules [][2]string, of map[string][]string, how string) {
		for _, n := range rules {
			from, ok := of[n[0]]
			if !ok {
				t.Errorf("never %s → %s: there is no package %s", n[0], n[1], n[0])
			}
			if d := reached(from, n[1]); d != "" {
				t.Errorf("%s imports %s%s (never %s → %s)", n[0], d, how, n[0], n[1])
			}
		}
	}
	check(neverDirect, imports, " itself")
	check(never, deps, "")
}

// TestDefaultBuildLeavesDriversOut: the jukebox binary built with no tags
// links neither GCS's nor Azure's driver.
func TestDefaultBuildLeavesDriversOut(t *testing.T) {
	ps := list(t, nil, "./cmd/jukebox")
	for _, m := range neverByDefault {
		if d := reached(ps[0].Deps, m); d != "" {
			t.Errorf("the default build of jukebox links %s", d)
		}
	}
}

// TestDefaultBuildSendsOTLPWithoutGRPC: no package of the default build
// imports google.golang.org/grpc (OTLP goes over net/http, through
// internal/otlpwire; the store reaches S3 without gocloud.dev/blob, whose
// error helpers link gRPC), and none of the OpenTelemetry OTLP exporters
// (each linking gRPC) is linked.
func TestDefaultBuildSendsOTLPWithoutGRPC(t *testing.T) {
	for _, p := range list(t, nil, "-deps", "./cmd/jukebox") {
		if strings.HasPrefix(p.ImportPath, "go.opentelemetry.io/otel/exporters/") || strings.HasPrefix(p.ImportPath, "go.opentelemetry.io/proto/otlp/collector/") {
			t.Errorf("the default build of jukebox links %s (and gRPC with it): send OTLP with internal/otlpwire", p.ImportPath)
		}
		if p.ImportPath == "google.golang.org/grpc" || strings.HasPrefix(p.ImportPath, "google.golang.org/grpc/") {
			continue
		}
		for _, imp := range p.Imports {
			if imp == "google.golang.org/grpc" || strings.HasPrefix(imp, "google.golang.org/grpc/") {
				t.Errorf("%s imports %s: the default build links no gRPC", p.ImportPath, imp)
				break
			}
		}
	}
}

// reached is the first of deps that path names (or lies under, for a
// path ending in "/"), else "".
func reached(deps []string, path string) string {
	for _, d := range deps {
		if d == path || strings.HasSuffix(path, "/") && strings.HasPrefix(d, path) || d == strings.TrimSuffix(path, "/") {
			return d
		}
	}
	return ""
}

// pkg is what go list tells of a package.
type pkg struct {
	ImportPath string
	Imports    []string // its own files' imports, tests' left out
	Deps       []string // everything it imports, directly or not
}

// list runs go list -json over patterns from the module's root, with the
// build tags given (none: the default build).
func list(t *testing.T, tags []string, patterns ...string) []pkg {
	t.Helper()
	args := []string{"list", "-json"}
	if len(tags) > 0 {
		args = append(args, "-tags="+strings.Join(tags, ","))
	}
	cmd := exec.Command("go", append(args, patterns...)...)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w\n%s", err, ee.Stderr)
		}
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	var ps []pkg
	for dec := json.NewDecoder(strings.NewReader(string(out))); ; {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			return ps
		} else if err != nil {
			t.Fatalf("go list: %v", err)
		}
		ps = append(ps, p)
	}
}

// TestArchitectureMatches: ARCHITECTURE.md's import rules are this test's
// table: a layer a line ("- layer N: `a`, `b`"), a never a line
// ("- never: `a` → `b`"), and the default build's left-out modules.
func TestArchitectureMatches(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var doc, want []string
	for i, l := range layers {
		want = append(want, fmt.Sprintf("layer %d: %s", i, quoted(l)))
	}
	for _, n := range neverDirect {
		want = append(want, fmt.Sprintf("never directly: `%s` → `%s`", n[0], shown(n[1])))
	}
	for _, n := range never {
		want = append(want, fmt.Sprintf("never: `%s` → `%s`", n[0], shown(n[1])))
	}
	want = append(want, "left out by default: "+quoted(neverByDefault))
	in := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Import rules"
			continue
		}
		if s, ok := strings.CutPrefix(line, "- "); ok && in && strings.Contains(s, ": `") {
			doc = append(doc, s)
		}
	}
	if len(doc) == 0 {
		t.Fatal("ARCHITECTURE.md has no \"## Import rules\" section with the rules as a list")
	}
	if !slices.Equal(doc, want) {
		t.Errorf("ARCHITECTURE.md's import rules and the test's table differ; the table says:\n- %s", strings.Join(want, "\n- "))
	}
}

func quoted(ps []string) string {
	q := make([]string, len(ps))
	for i, p := range ps {
		q[i] = "`" + p + "`"
	}
	return strings.Join(q, ", ")
}

// shown is a path as ARCHITECTURE.md writes it: the module's packages by
// their folder, the module itself as "jukebox/".
func shown(path string) string {
	if path == module+"/" {
		return "jukebox/"
	}
	return strings.TrimPrefix(path, module+"/")
}

// TestNoReflectMethod: nothing in the default build looks a method up by
// a name the linker cannot see (reflect's MethodByName with a variable,
// Method(i)). One such call anywhere makes the linker keep every exported
// method of every type that reaches an interface: 12 MB of the binary
// once, from kong's hooks (internal/kong is a copy that names them). The
// linker's dependency dump, which .ci/test writes beside the binaries it
// builds (JUKEBOX_BIN_DIR/dumpdep.txt), marks such functions
// <ReflectMethod>.
func TestNoReflectMethod(t *testing.T) {
	dump := filepath.Join(os.Getenv(testenv.EnvBinDir), "dumpdep.txt")
	f, err := os.Open(dump)
	if os.Getenv(testenv.EnvBinDir) == "" || err != nil {
		testenv.Unavailable(t, "the linker's dependency dump of ./cmd/...",
			"go build -ldflags=-dumpdep -o DIR/ ./cmd/... 2>DIR/dumpdep.txt, then set "+testenv.EnvBinDir+"=DIR (.ci/test does)")
	}
	defer f.Close()
	var seen []string
	head, edges := "# "+module+"/cmd/jukebox", 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	inJukebox := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# ") {
			inJukebox = line == head
		} else if inJukebox && strings.Contains(line, " -> ") {
			edges++
		}
		if strings.Contains(line, "<ReflectMethod>") && len(seen) < 20 {
			seen = append(seen, strings.TrimSpace(line))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", dump, err)
	}
	if edges == 0 {
		// Another program's output in its place would pass the check.
		t.Fatalf("%s holds no dependency edges under %q: not the linker's dump of the jukebox command", dump, head)
	}
	if len(seen) > 0 {
		t.Errorf("the default build looks methods up by a name the linker cannot see, so it keeps every method of every type; the linker's edges:\n%s", strings.Join(seen, "\n"))
	}
}
