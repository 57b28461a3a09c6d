package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// pythonFence is a ```python block of a Markdown page.
var pythonFence = regexp.MustCompile("(?s)```python\n(.*?)```")

// pythonExamples writes every ```python block of the documentation
// (README.md, docs/*.md, python/README.md) to dir as a module of its
// own, named after its page: what the type checkers check besides the
// package.
func pythonExamples(t *testing.T, root, dir string) []string {
	t.Helper()
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	pages = append(pages, filepath.Join(root, "README.md"), filepath.Join(root, "python", "README.md"))
	var files []string
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		base := strings.NewReplacer("-", "_", ".md", "").Replace(filepath.Base(page))
		for i, m := range pythonFence.FindAllSubmatch(text, -1) {
			name := fmt.Sprintf("ex_%s_%s_%d.py", filepath.Base(filepath.Dir(page)), base, i+1)
			file := filepath.Join(dir, name)
			must(t, os.WriteFile(file, m[1], 0o644))
			files = append(files, file)
		}
	}
	if len(files) == 0 {
		t.Fatal("no ```python example in the documentation: the pattern or the pages moved")
	}
	return files
}

// TestPythonTypes: the SDK and every Python example of the documentation
// pass mypy --strict and pyright (issue 32: README's own example failed
// both, the package had 14 mypy errors).
func TestPythonTypes(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	must(t, err)
	sdk := filepath.Join(root, "python")
	examples := pythonExamples(t, root, t.TempDir())
	t.Run("mypy", func(t *testing.T) {
		t.Parallel()
		python := testenv.RequirePythonModule(t, "mypy", "pytest") // the SDK's pytest plugin imports pytest
		// mypy's cache (typeshed's standard library, most of its 8 s of
		// CPU) is kept in the user's cache: mypy checks each cached
		// module against its source's hash, so a change is still seen.
		cache := []string{"--no-incremental", "--cache-dir", os.DevNull}
		if dir, err := os.UserCacheDir(); err == nil {
			cache = []string{"--cache-dir", filepath.Join(dir, "jukebox-tests", "mypy")}
		}
		args := append(append(append([]string{"-m", "mypy", "--strict"}, cache...),
			filepath.Join(sdk, "jukebox")), examples...)
		typeCheck(t, sdk, python, args...)
	})
	t.Run("pyright", func(t *testing.T) {
		t.Parallel()
		pyright := filepath.Join(root, "testdata", "agents", "node_modules", ".bin", "pyright")
		if _, err := os.Stat(pyright); err != nil {
			testenv.Unavailable(t, "pyright in testdata/agents/node_modules", "run bash .ci/setup-node.sh")
		}
		// The interpreter whose packages pyright resolves imports against:
		// one with pytest, which the SDK's pytest plugin imports.
		python := testenv.RequirePythonModule(t, "pytest")
		args := append([]string{"--pythonpath", python, "--pythonversion", "3.9", filepath.Join(sdk, "jukebox")}, examples...)
		typeCheck(t, sdk, pyright, args...)
	})
}

// typeCheck runs a type checker with the SDK importable, failing with
// its output when it finds anything.
func typeCheck(t *testing.T, sdk, name string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = sdk
	cmd.Env = append(os.Environ(), "MYPYPATH="+sdk, "PYTHONPATH="+sdk, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Base(name), err, out)
	}
}
