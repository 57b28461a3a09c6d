package tapefmt

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// schemas splits section 10.3 by kind: the text after each "**N `name`**"
// heading, up to the next.
func schemas(t *testing.T) map[Kind]string {
	t.Helper()
	text := section(t, formatDoc(t), "### 10.3")
	heads := regexp.MustCompile("(?m)^\\*\\*([0-9]+) `([a-z.]+)`\\*\\*").FindAllStringSubmatchIndex(text, -1)
	out := map[Kind]string{}
	for i, h := range heads {
		n, _ := strconv.Atoi(text[h[2]:h[3]])
		k, name := Kind(n), text[h[4]:h[5]]
		if k.String() != name {
			t.Errorf("section 10.3: kind %d is headed %s, the code says %s", n, name, k)
		}
		end := len(text)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		out[k] = text[h[1]:end]
	}
	return out
}

// TestFormatDocPayloads checks each kind's key table in section 10.3
// against its payload type: the keys in encoding order, their JSON types
// and whether they are omitempty or omitzero.
func TestFormatDocPayloads(t *testing.T) {
	t.Parallel()
	docs := schemas(t)
	for _, name := range KindNames() {
		k, _ := ParseKind(name)
		text, ok := docs[k]
		if !ok {
			t.Errorf("section 10.3 has no table for %s", name)
			continue
		}
		var rows []string
		for _, row := range tables(text)[0] {
			rows = append(rows, fmt.Sprintf("%s %s %s", strings.Trim(row[0], "`"), row[1], row[2]))
		}
		var fields []string
		typ := payloadType(k)
		for i := range typ.NumField() {
			f := typ.Field(i)
			key, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if key == "-" {
				continue // never on the tape
			}
			fields = append(fields, fmt.Sprintf("%s %s %s", key, docType(f.Type), opts))
		}
		if !slices.Equal(rows, fields) {
			t.Errorf("section 10.3, %s (key, type, omit):\n doc  %q\n code %q", name, rows, fields)
		}
	}
}

// docType is the name section 10.3 gives a Go field type.
func docType(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[Hash]():
		return "Hash"
	case reflect.TypeFor[http.Header]():
		return "header"
	case reflect.TypeFor[json.RawMessage]():
		return "raw JSON"
	case reflect.TypeFor[Bytes](), reflect.TypeFor[Chunks]():
		return t.Name()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint8, reflect.Uint32, reflect.Uint64:
		return "int"
	case reflect.Float64:
		return "float"
	case reflect.Slice:
		return "[" + docType(t.Elem()) + "]"
	case reflect.Map:
		return "{" + docType(t.Key()) + ": " + docType(t.Elem()) + "}"
	case reflect.Pointer:
		if t.Elem().Kind() == reflect.Struct {
			return "object"
		}
		return docType(t.Elem()) // an optional value: absent is not the zero value
	case reflect.Struct:
		return "object"
	}
	return t.String()
}

// enumValues reads the package's source for the string constants of each
// named type, so that a value added to the code is checked without a list
// here to update.
func enumValues(t *testing.T) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string][]string{}
	for _, file := range sourceFiles(t) {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				id, ok := vs.Type.(*ast.Ident)
				if !ok || len(vs.Values) != 1 {
					continue
				}
				if lit, ok := vs.Values[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					out[id.Name] = append(out[id.Name], v)
				}
			}
		}
	}
	return out
}

func sourceFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
}

// TestFormatDocEnums checks every enumerated field of a payload (a field
// of one of this package's string types) against section 10.3: the values
// its row names (or, when the row names none, the first column of the
// table that follows, as for file.change's op) are the type's constants.
func TestFormatDocEnums(t *testing.T) {
	t.Parallel()
	docs, values := schemas(t), enumValues(t)
	checked := map[string]bool{}
	for _, name := range KindNames() {
		k, _ := ParseKind(name)
		typ, tabs := payloadType(k), tables(docs[k])
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Type.Kind() != reflect.String || f.Type.Name() == "string" {
				continue
			}
			enum := f.Type.Name()
			checked[enum] = true
			var doc []string
			for _, row := range tabs[0] {
				if row[0] == "`"+jsonKey(f)+"`" {
					doc = slices.DeleteFunc(codes(row[3]), func(c string) bool { return c == enum })
					if !slices.Contains(codes(row[3]), enum) {
						t.Errorf("section 10.3, %s %s: the row does not name its type %s", name, jsonKey(f), enum)
					}
				}
			}
			if len(doc) == 0 && len(tabs) > 1 {
				for _, row := range tabs[1] {
					doc = append(doc, strings.Trim(row[0], "`"))
				}
			}
			code := values[enum]
			if len(code) == 0 {
				t.Errorf("%s.%s is a %s, which has no constants", typ.Name(), f.Name, enum)
			}
			if !sameSet(doc, code) {
				t.Errorf("section 10.3, %s %s: FORMAT.md lists %q, the %s constants are %q", name, jsonKey(f), doc, enum, code)
			}
		}
	}
	for _, enum := range []string{"FileOp", "RunMode", "MCPDirection", "ToolSource", "EndReason", "StagingMode"} {
		if !checked[enum] {
			t.Errorf("no payload field is a %s", enum)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
