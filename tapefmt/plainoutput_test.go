package tapefmt

import (
	"encoding/json"
	"reflect"
	"testing"
)

// outputForms are output payloads as json.Marshal writes them and as it
// does not: each decodes as encoding/json decodes it, whichever way
// Frame.Decode takes.
var outputForms = []string{
	`{"fd":1,"data":"hello\n"}`, `{"fd":2,"data":"plain text, é"}`, `{"fd":1,"data":""}`,
	`{"fd":1,"data":"a"}`, `{"fd":0,"data":"x"}`, `{"fd":123456789,"data":"x"}`, `{"fd":1234567890,"data":"x"}`,
	`{"fd":1,"data":"tab\tin it"}`, `{"fd":1,"data":"quote \" in it"}`, `{"fd":1,"data":"\u003c"}`,
	"{\"fd\":1,\"data\":\"raw \xff byte\"}", `{"fd":1,"data":{"base64":"/wA="}}`,
	`{"data":"x","fd":1}`, `{"fd":1, "data":"x"}`, `{"fd":01,"data":"x"}`, `{"fd":-1,"data":"x"}`,
	`{"fd":1,"data":"x"}}`, `{"fd":1,"data":"x"} `, `{"fd":1,"data":"x"`, `{"fd":1,"data":"x}`,
	`{"fd":1,"data":"x","fd":2}`, `{"fd":1,"data":"a"b"}`, `{"fd":1,"data":"}`, `{"fd":,"data":"x"}`,
	`{"fd":1.5,"data":"x"}`, `{"fd":1,"data":"x\"}`,
}

func TestOutputDecodesAsEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, in := range outputForms {
		var want Output
		werr := json.Unmarshal([]byte(in), &want)
		p, gerr := Frame{Kind: KindOutput, Schema: schemaVersion(KindOutput), Payload: []byte(in)}.Decode()
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%s: Decode error %v, encoding/json's %v", in, gerr, werr)
			continue
		}
		if werr == nil && !reflect.DeepEqual(p, &want) {
			t.Errorf("%s: Decode = %+v, encoding/json %+v", in, p, want)
		}
	}
	if _, ok := plainOutput([]byte(`{"fd":1,"data":"hello\n"}`)); ok {
		t.Error("a string with an escape took the fast way")
	}
	if o, ok := plainOutput([]byte(`{"fd":2,"data":"plain"}`)); !ok || o.Fd != 2 || string(o.Data) != "plain" {
		t.Errorf("the plain form: %+v, %v", o, ok)
	}
}

func FuzzOutputDecodesAsEncodingJSON(f *testing.F) {
	for _, in := range outputForms {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var want Output
		werr := json.Unmarshal(in, &want)
		p, gerr := Frame{Kind: KindOutput, Schema: schemaVersion(KindOutput), Payload: in}.Decode()
		if (werr == nil) != (gerr == nil) || werr == nil && !reflect.DeepEqual(p, &want) {
			t.Fatalf("%q: Decode %+v, %v; encoding/json %+v, %v", in, p, gerr, want, werr)
		}
	})
}
