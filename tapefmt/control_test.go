package tapefmt

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestControlMarshal: a control frame's payload, whose bodies are written
// as they are, reads back as the one encoding/json writes; a body that is
// not JSON is refused, never written, unless the writer says it checked
// it (Checked).
func TestControlMarshal(t *testing.T) {
	h := HashOf([]byte("x"))
	for _, c := range []Control{
		{Method: "POST", Path: "/v1/tx/t/write", Status: 200, Request: json.RawMessage(`{"path":"a<b>&","content":"` + strings.Repeat("é", 100) + `"}`), Answer: json.RawMessage(`{"path":"a","size":1}`)},
		{Method: "POST", Path: "/v1/tx", Status: 409, RequestBody: h, AnswerBody: h, File: h},
		{Method: "POST", Path: `/v1/"request":0`, Status: 200, Request: json.RawMessage(`null`)},
		{Method: "GET", Path: "/v1/info"},
	} {
		got, err := marshalPayload(c)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(c)
		var g, w Control
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		json.Unmarshal(want, &w)
		if !reflect.DeepEqual(normal(g), normal(w)) {
			t.Errorf("wrote %s, encoding/json %s", got, want)
		}
	}
	for _, bad := range []string{`{"a":`, `{"a":1}}`, `x`} {
		if b, err := marshalPayload(Control{Method: "POST", Request: json.RawMessage(bad)}); err == nil {
			t.Errorf("request %q written as %s", bad, b)
		}
		if b, err := marshalPayload(Control{Method: "POST", Answer: json.RawMessage(bad)}); err == nil {
			t.Errorf("answer %q written as %s", bad, b)
		}
	}
	// Checked: the writer vouches for its bodies, which go as they are;
	// the flag itself is not on the tape.
	c := Control{Method: "POST", Path: "/v1/tx/t/write", Status: 200, Request: json.RawMessage(`{"path":"a"}`), Checked: true}
	got, err := marshalPayload(c)
	if err != nil || string(got) != `{"method":"POST","path":"/v1/tx/t/write","status":200,"request":{"path":"a"}}` {
		t.Errorf("checked control written as %s, %v", got, err)
	}
}

// normal is c with its bodies compacted, as encoding/json writes them.
func normal(c Control) Control {
	for _, b := range []*json.RawMessage{&c.Request, &c.Answer} {
		var v any
		if json.Unmarshal(*b, &v) == nil && v != nil {
			*b, _ = json.Marshal(v)
		}
	}
	return c
}
