package controlapi

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestBatchEncodings: a batch sent as JSON and the same batch sent as
// BatchContentType (contents after the JSON) reach the Run as the same
// operations; a write of bytes (base64 in JSON) reaches it as the bytes.
func TestBatchEncodings(t *testing.T) {
	raw := []byte{0xff, 0x00, 'x', '<', '"'}
	ops := []BatchOp{
		{Op: "write", Body: json.RawMessage(`{"path":"t","content":"text é <b> \"q\"\n","mode":420}`), Base: &FileBase{Exists: true, Size: 3}},
		{Op: "write", Body: json.RawMessage(`{"path":"b","content":"/wB4PCI=","base64":true}`)},
		{Op: "write", Body: json.RawMessage(`{"path":"e","content":""}`)},
		{Op: "write", Body: json.RawMessage(`{"path":"content","content":"\"content\""}`)},
		{Op: "delete", Body: json.RawMessage(`{"path":"d"}`)},
	}
	var writes [2][]Write
	for i, binary := range []bool{false, true} {
		srv, f := batchServer(t)
		data, ctype := mustJSON(t, Batch{Ops: ops}), "application/json"
		if binary {
			var err error
			if data, err = (Batch{Ops: ops}).Binary(); err != nil {
				t.Fatal(err)
			}
			ctype = BatchContentType
		}
		status, body := post(t, srv.URL, ctype, data)
		if status != http.StatusOK || strings.Count(body, `"status":200`) != len(ops) {
			t.Fatalf("binary=%v: HTTP %d %s", binary, status, body)
		}
		writes[i] = f.writes
	}
	for i := range writes[0] {
		j, b := writes[0][i], writes[1][i]
		jc, err := j.Data()
		if err != nil {
			t.Fatal(err)
		}
		bc, err := b.Data()
		if err != nil {
			t.Fatal(err)
		}
		if j.Path != b.Path || j.Mode != b.Mode || !bytes.Equal(jc, bc) || b.Base64 {
			t.Errorf("write %d: JSON %+v (%q), binary %+v (%q)", i, j, jc, b, bc)
		}
	}
	if bc, _ := writes[1][1].Data(); len(writes[0]) != 4 || len(writes[1]) != 4 || string(bc) != string(raw) {
		t.Errorf("binary writes: %+v", writes[1])
	}
}

// TestBinaryBatchRefused: a BatchContentType body that does not add up
// is 400 naming what is wrong, and nothing of it is served.
func TestBinaryBatchRefused(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"ops":[]}`, "no newline"},
		{`{"ops":[{"op":"write","body":{"path":"p"},"content":5}]}` + "\nabc", "content of 5 bytes, 3 left"},
		{`{"ops":[{"op":"write","body":{"path":"p"},"content":1}]}` + "\nabc", "2 bytes after the last"},
		{`{"ops":[{"op":"delete","body":{"path":"p"},"content":1}]}` + "\na", "a delete has no content"},
		{`{"ops":[{"op":"write","body":{"path":"p","content":"x"},"content":1}]}` + "\na", "content both in the body and after it"},
		{`{"ops":[{"op":"write","body":{"path":"p","content":null},"content":1}]}` + "\na", "content both in the body and after it"},
		{`{"ops":[{"op":"write","body":{"path":"p"},"content":2}]}` + "\n\xff\xfe", "not UTF-8"},
		{`{"ops":[{"op":"write","body":null,"content":1}]}` + "\na", "not a JSON object"},
		{`{"ops":[{"op":"write","body":{"path":"p","size":1},"content":1}]}` + "\na", `unknown field \"size\"`},
		{`{"ops":[{"op":"write","body":{"path":"p"},"content":-1}]}` + "\n", "content of -1 bytes"},
		{`{"ops":[{"op":"write","body":{"path":"p"},"length":1}]}` + "\na", `unknown field \"length\"`},
	} {
		srv, f := batchServer(t)
		status, body := post(t, srv.URL, BatchContentType, []byte(c.body))
		if status != http.StatusBadRequest || !strings.Contains(body, c.want) {
			t.Errorf("%q: HTTP %d %s, want 400 naming %q", c.body, status, body, c.want)
		}
		if len(f.got) != 0 {
			t.Errorf("%q: served %v", c.body, f.got)
		}
	}
}

func batchServer(t *testing.T) (*httptest.Server, *fake) {
	f := newFake()
	f.answers["write"] = Written{Path: "p", Size: 1}
	f.answers["delete"] = PathOf{Path: "d"}
	srv := httptest.NewServer(NewServer(f, "tok"))
	t.Cleanup(srv.Close)
	return srv, f
}

func post(t *testing.T, url, ctype string, data []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url+Prefix+"/v1/tx/t1/batch", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAppendJSONString: the JSON string a binary batch's text content
// becomes on the tape reads back as that text, for every ASCII byte,
// HTML, separators JavaScript treats as line ends, and random UTF-8.
func TestAppendJSONString(t *testing.T) {
	var all []byte
	for c := range 0x80 {
		all = append(all, byte(c))
	}
	texts := []string{"", string(all), `<a href="x">&amp;</a>`, "line\u2028sep\u2029é😀\\\"", strings.Repeat("x", 4096)}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var b strings.Builder
		for range r.IntN(64) {
			b.WriteRune(rune(r.IntN(0x11000)))
		}
		texts = append(texts, strings.ToValidUTF8(b.String(), "?"))
	}
	for _, text := range texts {
		lit := appendJSONString([]byte("prefix"), []byte(text))
		var got string
		if !bytes.HasPrefix(lit, []byte("prefix")) || json.Unmarshal(lit[len("prefix"):], &got) != nil || got != text {
			t.Fatalf("%q became %s, which reads as %q", text, lit, got)
		}
	}
}

// TestTapedSizeCounted: the size a binary batch's write is checked by
// (MaxTapedBody) is the length of the body it is taped as, counted
// without building it.
func TestTapedSizeCounted(t *testing.T) {
	for _, content := range []string{"", "plain text", "quote \" backslash \\ newline \n tab \t cr \r", "\x00\x01\x1f\x7f", "héllo <&> \u2028"} {
		for _, head := range []string{`{}`, `{"path":"a.txt"}`, `{"path":"b","mode":420}`} {
			for _, b64 := range []bool{false, true} {
				l := &lazyBody{head: []byte(head), content: []byte(content), base64: b64}
				if got, want := l.size(), len(l.get()); got != want {
					t.Errorf("head %s, content %q, base64 %v: size %d, the body built is %d bytes", head, content, b64, got, want)
				}
			}
		}
	}
}
