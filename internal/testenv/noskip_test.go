package testenv

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestEverySkipGoesThroughTestenv: a test that skips on its own (t.Skip,
// t.Skipf, t.SkipNow) is invisible to JUKEBOX_REQUIRE_ALL, so CI can pass
// by skipping it. Every skip in the module's tests is one of this
// package's helpers (Unavailable, Short, Require*).
func TestEverySkipGoesThroughTestenv(t *testing.T) {
	root := repoRoot(t)
	self, _ := filepath.Abs(".")
	fset := token.NewFileSet()
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata" || name == "bench") || path == self {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				switch sel.Sel.Name {
				case "Skip", "Skipf", "SkipNow":
					rel, _ := filepath.Rel(root, fset.Position(call.Pos()).Filename)
					found = append(found, rel+":"+strconv.Itoa(fset.Position(call.Pos()).Line))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s skips on its own: use testenv.Unavailable (something missing), testenv.Short (slow by nature) or a Require helper", f)
	}
}
