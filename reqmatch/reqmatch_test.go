package reqmatch

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"mime/multipart"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func compiled(t *testing.T, r Rules) *Rules {
	t.Helper()
	if err := r.Compile(); err != nil {
		t.Fatal(err)
	}
	return &r
}

const chatJSON = "application/json"

func TestIgnorePaths(t *testing.T) {
	a := `{"model":"m","messages":[{"role":"system","content":"now is 10:00"},{"role":"user","content":"hi"}],"metadata":{"trace_id":"1","keep":"k"}}`
	b := `{"model":"m","messages":[{"role":"system","content":"now is 11:00"},{"role":"user","content":"hi"}],"metadata":{"trace_id":"2","keep":"k"}}`
	for _, c := range []struct {
		ignore []string
		equal  bool
	}{
		{nil, false},
		{[]string{"messages.0.content", "metadata.trace_id"}, true},
		{[]string{"messages.*.content", "metadata.*"}, true},
		{[]string{"messages.1.content", "metadata.trace_id"}, false}, // the wrong message
		{[]string{"messages.0", "metadata"}, true},
		{[]string{"*"}, true},
	} {
		r := compiled(t, Rules{Ignore: c.ignore})
		ca, cb := r.Canonical(chatJSON, []byte(a)), r.Canonical(chatJSON, []byte(b))
		if bytes.Equal(ca, cb) != c.equal {
			t.Errorf("ignore %q: equal=%v, want %v\n%s\n%s", c.ignore, !c.equal, c.equal, ca, cb)
		}
	}
	// Positions after an element left out stay put.
	r := compiled(t, Rules{Ignore: []string{"a.0"}})
	if got := string(r.Canonical(chatJSON, []byte(`{"a":[1,2]}`))); got != `{"a":[null,2]}` {
		t.Errorf("array element left out: %s", got)
	}
	// A key with a dot in it.
	r = compiled(t, Rules{Ignore: []string{`x\.y`}})
	if got := string(r.Canonical(chatJSON, []byte(`{"x.y":1,"x":{"y":2}}`))); got != `{"x":{"y":2}}` {
		t.Errorf("escaped dot: %s", got)
	}
}

func TestScrub(t *testing.T) {
	uuid := `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`
	r := compiled(t, Rules{Scrub: []Scrub{{Pattern: `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`, With: "<time>"}, {Pattern: uuid, With: DefaultScrubWith}}})
	a := `{"messages":[{"content":"at 2026-12-02T10:00:00Z run 123e4567-e89b-12d3-a456-426614174000"}]}`
	b := `{"messages":[{"content":"at 2026-12-03T11:30:59Z run 00000000-0000-0000-0000-000000000001"}]}`
	ca, cb := r.Canonical(chatJSON, []byte(a)), r.Canonical(chatJSON, []byte(b))
	if !bytes.Equal(ca, cb) {
		t.Fatalf("scrubbed bodies differ:\n%s\n%s", ca, cb)
	}
	if !strings.Contains(string(ca), "at <time> run <scrubbed>") {
		t.Errorf("scrubbed form: %s", ca)
	}
	// A body that is not JSON is scrubbed as bytes.
	if got := string(r.Canonical("text/plain", []byte("t=2026-12-02T10:00:00Z"))); got != "t=<time>" {
		t.Errorf("plain body: %q", got)
	}
}

func TestCompileErrors(t *testing.T) {
	for _, r := range []Rules{
		{Scrub: []Scrub{{Pattern: "("}}},
		{Scrub: []Scrub{{Pattern: "x*"}}},
		{Ignore: []string{""}},
		{Ignore: []string{"a..b"}},
		{Ignore: []string{"a."}},
	} {
		if err := r.Compile(); err == nil {
			t.Errorf("%+v: no error", r)
		}
	}
}

// multipartBody builds a body as the openai SDK's files.create sends it,
// with its own random boundary.
func multipartBody(t *testing.T, purpose, content string) (string, []byte) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	w.WriteField("purpose", purpose)
	fw, err := w.CreateFormFile("file", "notes.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	fw.Write([]byte(content))
	w.Close()
	return w.FormDataContentType(), buf.Bytes()
}

func TestMultipartIgnoresBoundary(t *testing.T) {
	r := compiled(t, Rules{})
	ct1, b1 := multipartBody(t, "fine-tune", `{"a":1}`)
	ct2, b2 := multipartBody(t, "fine-tune", `{"a":1}`)
	if bytes.Equal(b1, b2) {
		t.Fatal("the two bodies share a boundary; the test proves nothing")
	}
	if c1, c2 := r.Canonical(ct1, b1), r.Canonical(ct2, b2); !bytes.Equal(c1, c2) {
		t.Errorf("same parts, other boundary: differ\n%s\n%s", c1, c2)
	}
	ct3, b3 := multipartBody(t, "fine-tune", `{"a":2}`)
	c1, c3 := r.Canonical(ct1, b1), r.Canonical(ct3, b3)
	if bytes.Equal(c1, c3) {
		t.Errorf("different file content compares equal")
	}
	if p := FirstDiff(c1, c3); p != "multipart.1.body" {
		t.Errorf("first difference at %q, want multipart.1.body", p)
	}
}

func TestFormOrder(t *testing.T) {
	r := compiled(t, Rules{Ignore: []string{"form.stamp"}})
	ct := "application/x-www-form-urlencoded"
	a, b := r.Canonical(ct, []byte("b=2&a=1&stamp=9")), r.Canonical(ct, []byte("a=1&stamp=10&b=2"))
	if !bytes.Equal(a, b) {
		t.Errorf("form fields in another order differ:\n%s\n%s", a, b)
	}
}

func TestFirstDiff(t *testing.T) {
	for _, c := range []struct{ a, b, want string }{
		{`{"a":1}`, `{"a":1}`, ""},
		{`{"messages":[{"content":"x"},{"content":"y"}]}`, `{"messages":[{"content":"x"},{"content":"z"}]}`, "messages.1.content"},
		{`{"messages":[1]}`, `{"messages":[1,2]}`, "messages.1"},
		{`{"a":1}`, `{"a":1,"b":2}`, "b"},
		{`{"a.b":1}`, `{"a.b":2}`, `a\.b`},
		{`[1]`, `{"a":1}`, "(body)"},
		{`not json`, `also not`, "(body)"},
	} {
		if got := FirstDiff([]byte(c.a), []byte(c.b)); got != c.want {
			t.Errorf("FirstDiff(%s, %s) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}

func TestPathsThatMatchNothing(t *testing.T) {
	bodies := []Body{{chatJSON, []byte(`{"messages":[{"role":"user","content":"hi"}],"metadata":{"trace_id":"1"}}`)}}
	got, err := Paths([]string{"messages.*.content", "metadata.trace_id", "messages.*.contnt", "nothere"}, bodiesOf(bodies))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Path != "messages.*.contnt" || got[1].Path != "nothere" {
		t.Fatalf("unmatched = %+v", got)
	}
	if strings.Join(got[0].Near, ",") != "content,role" {
		t.Errorf("near keys for a typo: %v", got[0].Near)
	}
}

// bodiesOf is bodies as Paths takes them, one at a time.
func bodiesOf(bodies []Body) iter.Seq2[Body, error] {
	return func(yield func(Body, error) bool) {
		for _, b := range bodies {
			if !yield(b, nil) {
				return
			}
		}
	}
}

func TestLoadSave(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "run.jbx.d", "match.json")
	in := Rules{Ignore: []string{"messages.*.content"}, Scrub: []Scrub{{Pattern: `\d+`, With: "N"}}}
	if err := in.Save(p); err != nil {
		t.Fatal(err)
	}
	out, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Ignore) != 1 || out.Scrub[0].Pattern != `\d+` || out.Scrub[0].With != "N" {
		t.Errorf("round trip: %+v", out)
	}
	os.WriteFile(p, []byte(`{"scrub":[{"pattern":"x"}]}`), 0o644)
	if out, err = Load(p); err != nil || out.Scrub[0].With != DefaultScrubWith {
		t.Errorf("default replacement: %+v %v", out, err)
	}
	os.WriteFile(p, []byte(`{"ignores":["x"]}`), 0o644)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "ignores") {
		t.Errorf("unknown key: %v", err)
	}
	os.WriteFile(p, []byte(`{"scrub":[{"pattern":"("}]}`), 0o644)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("bad pattern names the file: %v", err)
	}
}

func TestMerge(t *testing.T) {
	a := Rules{Ignore: []string{"x"}, Scrub: []Scrub{{Pattern: "a", With: "A"}}}
	m := a.Merge(Rules{Ignore: []string{"x", "y"}, Scrub: []Scrub{{Pattern: "a", With: "A"}, {Pattern: "b", With: "B"}}})
	if strings.Join(m.Ignore, ",") != "x,y" || len(m.Scrub) != 2 {
		t.Errorf("merge: %+v", m)
	}
}

func TestDefaultRules(t *testing.T) {
	r := Default()
	a := r.Canonical(chatJSON, []byte(`{"model":"m","stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}],"temperature":0.70}`))
	b := r.Canonical(chatJSON, []byte(`{ "messages":[{"content":"hi","role":"user"}], "temperature":0.70, "model":"m", "user":"u-123" }`))
	if string(a) != string(b) {
		t.Fatalf("canonical forms differ:\n%s\n%s", a, b)
	}
	if c := r.Canonical(chatJSON, []byte(`{"temperature":0.7,"model":"m","messages":[{"content":"hi","role":"user"}]}`)); string(c) == string(a) {
		t.Fatal("0.7 and 0.70 are different requests as written; canonical form must keep numbers as written")
	}
	if got := r.Canonical(chatJSON, []byte("not json")); string(got) != "not json" {
		t.Fatalf("non-JSON body changed: %q", got)
	}
	if got := string(r.Canonical(chatJSON, []byte(`{"a":"<b>&"}`))); got != `{"a":"<b>&"}` {
		t.Errorf("HTML characters escaped: %s", got)
	}
}

// TestPathsTakeBodiesOneAtATime: the bodies are taken one at a time and
// no more once every path matched one (a long run's requests, all decoded
// and held at once, were hundreds of megabytes); an error of the bodies
// taken is Paths' error.
func TestPathsTakeBodiesOneAtATime(t *testing.T) {
	taken := 0
	bodies := func(yield func(Body, error) bool) {
		for i := range 1000 {
			taken++
			if !yield(Body{chatJSON, fmt.Appendf(nil, `{"messages":[{"role":"user","content":"%d"}]}`, i)}, nil) {
				return
			}
		}
	}
	if got, err := Paths([]string{"messages.*.content"}, bodies); err != nil || len(got) != 0 || taken != 1 {
		t.Errorf("a path the first body has: %+v, %v, %d bodies taken; want none unmatched, one taken", got, err, taken)
	}
	taken = 0
	if got, err := Paths([]string{"messages.*.contnt"}, bodies); err != nil || len(got) != 1 || taken != 1000 {
		t.Errorf("a typo: %+v, %v, %d bodies taken; want it unmatched after all 1000", got, err, taken)
	}
	broken := func(yield func(Body, error) bool) { yield(Body{}, errors.New("frame 7: damaged")) }
	if _, err := Paths([]string{"messages.*.content"}, broken); err == nil || !strings.Contains(err.Error(), "frame 7") {
		t.Errorf("an unreadable body: %v", err)
	}
}
