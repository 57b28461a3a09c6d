package controlapi

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// These tests hold docs/control-api.md, the server's routes and the Python
// SDK's paths to each other, as tapefmt's hold FORMAT.md to the codec: a
// route added to one and not the others, or a key a body or an answer
// gains or loses without the document, fails here.

// notInPythonSDK are the routes the Python SDK does not call: jukebox mcp's.
// A new route goes into the SDK or here.
var notInPythonSDK = []string{
	"POST /v1/endpoint", "POST /v1/mcp/start", "POST /v1/mcp/message",
	"POST /v1/mcp/outbox", "GET /v1/mcp/live",
}

// serverRoutes are the server's versioned routes by "METHOD PATH".
func serverRoutes() map[string]Route {
	out := map[string]Route{}
	for _, r := range NewServer(newFake(), "t").Routes() {
		if strings.HasPrefix(r.Path, "/v1/") {
			out[r.Method+" "+r.Path] = r
		}
	}
	return out
}

// docRow is a request row of the document's tables.
type docRow struct{ body, answer string }

var docRequest = regexp.MustCompile("^\\| `(GET|POST) (/v1/[^`]+)` \\|([^|]*)\\|(.*)\\|$")

// docRoutes are the document's request rows by "METHOD PATH", its ID
// written {id} as the server's patterns write it.
func docRoutes(t *testing.T) (map[string]docRow, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "control-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]docRow{}
	for _, l := range strings.Split(string(b), "\n") {
		if m := docRequest.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			out[m[1]+" "+strings.ReplaceAll(m[2], "/ID/", "/{id}/")] = docRow{m[3], m[4]}
		}
	}
	return out, string(b)
}

var (
	pyCall = regexp.MustCompile(`\.(?:call|send)\(\s*"(GET|POST)",\s*f?"([^"]+)"`)
	// _op sends an operation; _stage queues one for a batch (write, delete).
	pyOp = regexp.MustCompile(`\._(?:op|stage)\(\s*"([a-z-]+)"`)
)

// pythonRoutes are the requests the Python SDK makes, by "METHOD PATH".
func pythonRoutes(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "python", "jukebox", "*.py"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the Python SDK's sources: %v", err)
	}
	out := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range pyCall.FindAllStringSubmatch(string(b), -1) {
			if m[2] == "tx/{self.tx_id}/{op}" { // _op: one per operation
				for _, op := range pyOp.FindAllStringSubmatch(string(b), -1) {
					out[m[1]+" /v1/tx/{id}/"+op[1]] = true
				}
				continue
			}
			out[m[1]+" /v1/"+strings.ReplaceAll(m[2], "{self.tx_id}", "{id}")] = true
		}
	}
	return out
}

func sorted[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestRoutesDocumented: the document's requests are the server's.
func TestRoutesDocumented(t *testing.T) {
	doc, _ := docRoutes(t)
	srv := serverRoutes()
	if got, want := sorted(doc), sorted(srv); !slices.Equal(got, want) {
		t.Errorf("docs/control-api.md documents\n%v\nthe server serves\n%v", got, want)
	}
}

// TestUnversionedRoutesDocumented: the paths without a version the
// document names are the server's, each the same as a v1 path.
func TestUnversionedRoutesDocumented(t *testing.T) {
	_, text := docRoutes(t)
	var doc, srv []string
	for _, m := range regexp.MustCompile("`"+Prefix+"(/[a-z/-]+)`").FindAllStringSubmatch(text, -1) {
		doc = append(doc, m[1])
	}
	v1 := serverRoutes()
	for _, r := range NewServer(newFake(), "t").Routes() {
		if !strings.HasPrefix(r.Path, "/v1/") {
			srv = append(srv, r.Path)
			if _, ok := v1[r.Method+" /v1"+r.Path]; !ok {
				t.Errorf("%s %s has no v1 path", r.Method, r.Path)
			}
		}
	}
	slices.Sort(doc)
	slices.Sort(srv)
	if !slices.Equal(doc, srv) {
		t.Errorf("docs/control-api.md names %v without a version, the server serves %v", doc, srv)
	}
}

// TestPythonSDKRoutes: every request the Python SDK makes is served, and
// every route the server serves is the SDK's or listed in notInPythonSDK.
func TestPythonSDKRoutes(t *testing.T) {
	py := pythonRoutes(t)
	srv := serverRoutes()
	for _, r := range sorted(py) {
		if _, ok := srv[r]; !ok {
			t.Errorf("the Python SDK calls %s, which the server does not serve", r)
		}
	}
	for _, r := range sorted(srv) {
		if py[r] == slices.Contains(notInPythonSDK, r) {
			t.Errorf("%s: in the Python SDK %v, listed in notInPythonSDK %v", r, py[r], !py[r])
		}
	}
}

var quotedKey = regexp.MustCompile(`"([a-z0-9_]+)"`)

// jsonKeys are the JSON keys of struct type typ's fields.
func jsonKeys(typ reflect.Type) []string {
	var keys []string
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && name != "-" && name != "" {
			keys = append(keys, name)
		}
	}
	slices.Sort(keys)
	return keys
}

// keysIn are the quoted keys in text, sorted, once each.
func keysIn(text string) []string {
	var keys []string
	for _, m := range quotedKey.FindAllStringSubmatch(text, -1) {
		keys = append(keys, m[1])
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// topLevel is the text of the first {...} in text, without the objects
// nested in it.
func topLevel(text string) string {
	var b strings.Builder
	depth := 0
	for _, r := range text[max(strings.Index(text, "{"), 0):] {
		switch {
		case r == '{':
			depth++
		case r == '}':
			depth--
		case depth == 1:
			b.WriteRune(r)
		}
		if depth == 0 && b.Len() > 0 {
			break
		}
	}
	return b.String()
}

// TestDocumentedKeys: a route's body in the document has its request
// type's keys, and its answer the answer type's: every key of the type is
// named, and the answer's first object has no key the type lacks.
func TestDocumentedKeys(t *testing.T) {
	doc, _ := docRoutes(t)
	for name, r := range serverRoutes() {
		row, ok := doc[name]
		if !ok {
			continue // TestRoutesDocumented
		}
		if got, want := keysIn(row.body), jsonKeys(r.Request); !slices.Equal(got, want) {
			t.Errorf("%s: the document's body has %v, %v has %v", name, got, r.Request, want)
		}
		all, want := keysIn(row.answer), jsonKeys(r.Answer)
		for _, k := range want {
			if !slices.Contains(all, k) {
				t.Errorf("%s: the document's answer does not name %q (%v)", name, k, r.Answer)
			}
		}
		for _, k := range keysIn(topLevel(row.answer)) {
			if !slices.Contains(want, k) {
				t.Errorf("%s: the document's answer has %q, %v has not", name, k, r.Answer)
			}
		}
	}
}
