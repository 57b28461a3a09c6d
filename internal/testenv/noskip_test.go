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
// package's helpers (Unavailable, Short, Require*). And no test builds
// the binaries itself (a minute each, cold): testenv.Binaries does, once.
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
				rel, _ := filepath.Rel(root, fset.Position(call.Pos()).Filename)
				at := rel + ":" + strconv.Itoa(fset.Position(call.Pos()).Line)
				switch {
				case sel.Sel.Name == "Skip" || sel.Sel.Name == "Skipf" || sel.Sel.Name == "SkipNow":
					found = append(found, at+" skips on its own: use testenv.Unavailable (something missing), testenv.Short (slow by nature) or a Require helper")
				case goBuild(call):
					found = append(found, at+" builds a binary of its own: use testenv.Binaries, built once by .ci/test")
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
		t.Error(f)
	}
}

// goBuild reports whether call runs `go build` (exec.Command("go",
// "build", ...)).
func goBuild(call *ast.CallExpr) bool {
	if len(call.Args) < 2 {
		return false
	}
	lit := func(e ast.Expr) string {
		if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
			v, _ := strconv.Unquote(b.Value)
			return v
		}
		return ""
	}
	first := 0
	if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "CommandContext" {
		first = 1
	}
	return len(call.Args) > first+1 && lit(call.Args[first]) == "go" && lit(call.Args[first+1]) == "build"
}
