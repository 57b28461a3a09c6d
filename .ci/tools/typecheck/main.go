// Command typecheck type-checks Go packages, their tests and every
// package they import, from source, for the GOOS and GOARCH of its
// environment, and prints each error as file:line:col: message. It exits
// 1 when there is any.
//
//	GOOS=darwin GOARCH=arm64 typecheck [-C dir] [-tags list] [-cache dir] ./...
//
// .ci/cross.sh runs it for the systems docs/platforms.md names: it finds
// what go build would refuse there (a Linux-only call, a file's build
// constraint, a missing method) without compiling anything, so a cold
// build cache costs seconds instead of compiling the standard library
// and every dependency once more per system. What only a compiler or a
// linker sees (a function declared without a body and no assembly for
// it, a linkname) is outside its reach.
//
// The packages outside the main module (the standard library and the
// dependencies), once they check without error, are kept in the cache
// folder as export data, under a key of everything their types depend
// on: the Go release, the target, their files and the keys of what they
// import. A later run reads them from there and checks only the module's
// own packages: a few seconds a target instead of half a minute, which CI
// otherwise spends on every run. A check that found no error is kept as
// an empty entry under the key of all it checked: the same check again
// (CI run again on one commit) only lists the packages. Entries unused
// for 30 days are removed.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/tools/go/gcexportdata"
	"golang.org/x/tools/go/packages"
)

// salt changes the keys when what is kept changes meaning.
const salt = "typecheck export data v1"

func main() {
	dir := flag.String("C", ".", "the module's `folder`")
	tags := flag.String("tags", "", "comma-separated build `tags`, as go build -tags")
	cacheDir := flag.String("cache", defaultCache(), "the `folder` that keeps checked dependencies (empty: none)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: [GOOS=os GOARCH=arch] typecheck [-C dir] [-tags list] [-cache dir] packages...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	start := time.Now()
	env, err := goEnv(*dir, "GOROOT", "GOMODCACHE", "GOOS", "GOARCH", "CGO_ENABLED")
	if err != nil {
		fmt.Fprintln(os.Stderr, "typecheck:", err)
		os.Exit(1)
	}
	cfg := &packages.Config{
		// Files and the import graph only: the checking is done here,
		// from source or from the cache.
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles |
			packages.NeedImports | packages.NeedDeps | packages.NeedModule,
		Dir:   *dir,
		Tests: true,
	}
	if *tags != "" {
		cfg.BuildFlags = []string{"-tags", *tags}
	}
	pkgs, err := packages.Load(cfg, flag.Args()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "typecheck:", err)
		os.Exit(1)
	}
	c := &checker{
		fset:    token.NewFileSet(),
		sizes:   types.SizesFor("gc", env["GOARCH"]),
		shared:  map[string]*types.Package{},
		cache:   *cacheDir,
		target:  strings.Join([]string{salt, runtime.Version(), env["GOOS"], env["GOARCH"], env["CGO_ENABLED"], *tags}, "\x00"),
		fixed:   []string{env["GOROOT"] + string(filepath.Separator), env["GOMODCACHE"] + string(filepath.Separator)},
		nodes:   map[*packages.Package]*node{},
		workers: make(chan struct{}, runtime.GOMAXPROCS(0)),
	}
	if c.sizes == nil {
		fmt.Fprintf(os.Stderr, "typecheck: no type sizes for GOARCH %q\n", env["GOARCH"])
		os.Exit(1)
	}
	var order []*node
	packages.Visit(pkgs, nil, func(p *packages.Package) { order = append(order, c.node(p)) })
	for _, n := range order {
		if err := c.keyOf(n); err != nil {
			fmt.Fprintln(os.Stderr, "typecheck:", err)
			os.Exit(1)
		}
	}
	// The same packages from the same files checked without error before:
	// nothing to check again (CI's runs of one commit check it once).
	whole := c.wholeKey(pkgs)
	if c.cache != "" {
		if _, err := os.Stat(c.entry(whole)); err == nil {
			now := time.Now()
			os.Chtimes(c.entry(whole), now, now)
			fmt.Printf("typecheck: %d packages and test variants, checked without error before (%.1fs)\n", len(pkgs), time.Since(start).Seconds())
			return
		}
	}
	var wg sync.WaitGroup
	for _, n := range order {
		wg.Go(func() { c.check(n) })
	}
	wg.Wait()
	// A package and its test variant share files: each error once.
	seen, errs := map[string]bool{}, 0
	cached := 0
	for _, n := range order {
		if n.fromCache {
			cached++
		}
		for _, e := range n.errs {
			if !seen[e] {
				seen[e] = true
				errs++
				fmt.Fprintln(os.Stderr, e)
			}
		}
	}
	if errs > 0 {
		fmt.Fprintf(os.Stderr, "typecheck: %d error(s)\n", errs)
		os.Exit(1)
	}
	if c.cache != "" {
		c.mark(whole)
	}
	c.trim()
	fmt.Printf("typecheck: %d packages and test variants, %d with what they import (%d from the cache), no error (%.1fs)\n",
		len(pkgs), len(order), cached, time.Since(start).Seconds())
}

// defaultCache is the user's cache folder for checked dependencies.
func defaultCache() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "jukebox-tests", "typecheck")
}

// goEnv is go env's values of names, for the module at dir.
func goEnv(dir string, names ...string) (map[string]string, error) {
	cmd := exec.Command("go", append([]string{"env"}, names...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != len(names) {
		return nil, fmt.Errorf("go env: %d values for %d names", len(lines), len(names))
	}
	m := map[string]string{}
	for i, n := range names {
		m[n] = lines[i]
	}
	return m, nil
}

type checker struct {
	fset    *token.FileSet
	sizes   types.Sizes
	cache   string
	target  string   // what every key starts with
	fixed   []string // folders whose files never change under a path (GOROOT, the module cache)
	nodes   map[*packages.Package]*node
	workers chan struct{} // one token a package being parsed and checked

	// shared holds the packages outside the main module by path, for the
	// export data read from the cache to refer to (under mu).
	mu     sync.Mutex
	shared map[string]*types.Package
}

// node is a package to check, and what its check found.
type node struct {
	p         *packages.Package
	deps      map[string]*node // by import path
	key       string
	done      chan struct{}
	types     *types.Package // nil when it could not be checked
	errs      []string
	fromCache bool
}

func (c *checker) node(p *packages.Package) *node {
	if n := c.nodes[p]; n != nil {
		return n
	}
	n := &node{p: p, deps: map[string]*node{}, done: make(chan struct{})}
	for path, d := range p.Imports {
		n.deps[path] = c.nodes[d] // visited before p
	}
	c.nodes[p] = n
	return n
}

// cacheable says whether n is kept in the cache: outside the main module,
// the same package under its path in every run.
func (n *node) cacheable() bool {
	return n.p.Module == nil || !n.p.Module.Main
}

// goVersion is the language version n is checked under, as go/packages
// sets it.
func (n *node) goVersion() string {
	if n.p.Module != nil && n.p.Module.GoVersion != "" {
		return "go" + n.p.Module.GoVersion
	}
	return ""
}

// keyOf sets n's key: the target, its path and language version, its
// files (their path alone where files never change) and the keys of what
// it imports. Its imports' keys are set already.
func (c *checker) keyOf(n *node) error {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", c.target, n.p.PkgPath, n.goVersion())
	for _, f := range n.p.CompiledGoFiles {
		if c.isFixed(f) {
			fmt.Fprintf(h, "file %s\x00", f)
			continue
		}
		// A file of a clone: by its path in the module, the same in
		// every clone (CI clones each run into a new folder).
		name := f
		if n.p.Module != nil {
			if rel, err := filepath.Rel(n.p.Module.Dir, f); err == nil {
				name = filepath.ToSlash(rel)
			}
		}
		fmt.Fprintf(h, "file %s\x00", name)
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%x\x00", sha256.Sum256(data))
	}
	paths := make([]string, 0, len(n.deps))
	for p := range n.deps {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		fmt.Fprintf(h, "import %s %s\x00", p, n.deps[p].key)
	}
	n.key = hex.EncodeToString(h.Sum(nil))
	return nil
}

// wholeKey is the key of a check of pkgs: the keys of the packages named
// (each holds the keys of all it imports).
func (c *checker) wholeKey(pkgs []*packages.Package) string {
	keys := make([]string, 0, len(pkgs))
	for _, p := range pkgs {
		keys = append(keys, p.ID+" "+c.nodes[p].key)
	}
	slices.Sort(keys)
	h := sha256.New()
	fmt.Fprintf(h, "whole\x00%s\x00", c.target)
	for _, k := range keys {
		fmt.Fprintf(h, "%s\x00", k)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// mark keeps an empty entry under key: a check that found no error.
func (c *checker) mark(key string) {
	path := c.entry(key)
	if os.MkdirAll(filepath.Dir(path), 0o755) == nil {
		os.WriteFile(path, nil, 0o644)
	}
}

func (c *checker) isFixed(f string) bool {
	for _, d := range c.fixed {
		if len(d) > 1 && strings.HasPrefix(f, d) {
			return true
		}
	}
	return false
}

func (c *checker) entry(key string) string {
	return filepath.Join(c.cache, key[:2], key)
}

// check checks n once its imports are checked: from the cache when it
// is kept there, else from source.
func (c *checker) check(n *node) {
	defer close(n.done)
	for _, d := range n.deps {
		<-d.done
	}
	n.errs = listErrors(n.p)
	if n.p.PkgPath == "unsafe" {
		n.types = types.Unsafe
		return
	}
	for path, d := range n.deps {
		if d.types == nil {
			n.errs = append(n.errs, fmt.Sprintf("%s: %s did not check", n.p.ID, path))
			return
		}
	}
	if n.cacheable() && c.cache != "" && c.read(n) {
		return
	}
	c.workers <- struct{}{}
	c.fromSource(n)
	<-c.workers
	if n.cacheable() && n.types != nil && len(n.errs) == 0 {
		c.mu.Lock()
		c.shared[n.p.PkgPath] = n.types
		c.mu.Unlock()
		c.write(n)
	}
}

// listErrors are the errors go list found in p (a missing file, a build
// constraint that leaves no file).
func listErrors(p *packages.Package) []string {
	var out []string
	for _, e := range p.Errors {
		out = append(out, e.Error())
	}
	return out
}

// read reads n from the cache; false when it is not there or does not read.
func (c *checker) read(n *node) bool {
	data, err := os.ReadFile(c.entry(n.key))
	if err != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	pkg, err := gcexportdata.Read(bytes.NewReader(data), c.fset, c.shared, n.p.PkgPath)
	if err != nil || !pkg.Complete() {
		delete(c.shared, n.p.PkgPath)
		return false
	}
	n.types, n.fromCache = pkg, true
	now := time.Now()
	os.Chtimes(c.entry(n.key), now, now) // used: trim keeps it
	return true
}

// write keeps n's export data in the cache, written beside and renamed
// into place so that a reader never sees half of it.
func (c *checker) write(n *node) {
	if c.cache == "" {
		return
	}
	var buf bytes.Buffer
	if err := gcexportdata.Write(&buf, c.fset, n.types); err != nil {
		return
	}
	path := c.entry(n.key)
	if os.MkdirAll(filepath.Dir(path), 0o755) != nil {
		return
	}
	tmp := fmt.Sprintf("%s.tmp.%d", path, os.Getpid())
	if os.WriteFile(tmp, buf.Bytes(), 0o644) != nil || os.Rename(tmp, path) != nil {
		os.Remove(tmp)
	}
}

// fromSource parses n's files and checks them against its imports.
func (c *checker) fromSource(n *node) {
	var files []*ast.File
	for _, f := range n.p.CompiledGoFiles {
		src, err := os.ReadFile(f)
		if err != nil {
			n.errs = append(n.errs, err.Error())
			return
		}
		af, err := parser.ParseFile(c.fset, f, src, parser.AllErrors|parser.ParseComments)
		var list scanner.ErrorList
		if errors.As(err, &list) {
			for _, e := range list {
				n.errs = append(n.errs, e.Error())
			}
		} else if err != nil {
			n.errs = append(n.errs, err.Error())
		}
		if af != nil {
			files = append(files, af)
		}
	}
	tc := &types.Config{
		Importer: importer(func(path string) (*types.Package, error) {
			if path == "unsafe" {
				return types.Unsafe, nil
			}
			d := n.deps[path]
			if d == nil || d.types == nil {
				return nil, fmt.Errorf("no package for import %s", path)
			}
			return d.types, nil
		}),
		Error:     func(err error) { n.errs = append(n.errs, err.Error()) },
		Sizes:     c.sizes,
		GoVersion: n.goVersion(),
	}
	n.types, _ = tc.Check(n.p.PkgPath, c.fset, files, nil)
}

type importer func(path string) (*types.Package, error)

func (f importer) Import(path string) (*types.Package, error) { return f(path) }

// trim removes the cache's entries unused for 30 days.
func (c *checker) trim() {
	if c.cache == "" {
		return
	}
	old := time.Now().Add(-30 * 24 * time.Hour)
	filepath.WalkDir(c.cache, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil && info.ModTime().Before(old) {
			os.Remove(path)
		}
		return nil
	})
}
