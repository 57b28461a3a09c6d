package tapefmt

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestKindText(t *testing.T) {
	t.Parallel()
	names := KindNames()
	if len(names) != len(payloadTypes) {
		t.Fatalf("KindNames has %d names, %d kinds have payloads", len(names), len(payloadTypes))
	}
	for i, name := range names {
		k := Kind(i + 1) // numbered from 1, in order, with no gaps
		if !k.Known() || k.String() != name {
			t.Errorf("kind %d: String %q, Known %v; KindNames says %q", k, k, k.Known(), name)
		}
		b, err := k.MarshalText()
		if err != nil || string(b) != name {
			t.Errorf("kind %d: MarshalText = %q, %v", k, b, err)
		}
		var back Kind
		if err := back.UnmarshalText(b); err != nil || back != k {
			t.Errorf("UnmarshalText(%q) = %d, %v; want %d", b, back, err, k)
		}
		if p, err := ParseKind(name); err != nil || p != k {
			t.Errorf("ParseKind(%q) = %d, %v; want %d", name, p, err, k)
		}
	}
}

func TestKindJSON(t *testing.T) {
	t.Parallel()
	in := struct {
		Kind  Kind         `json:"kind"`
		Count map[Kind]int `json:"count"`
	}{KindFileChange, map[Kind]int{KindLLMRequest: 2, KindMarker: 1}}
	b, err := json.Marshal(in)
	if err != nil || string(b) != `{"kind":"file.change","count":{"llm.request":2,"marker":1}}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	out := in
	out.Kind, out.Count = 0, nil
	if err := json.Unmarshal(b, &out); err != nil || out.Kind != in.Kind || len(out.Count) != 2 || out.Count[KindLLMRequest] != 2 {
		t.Fatalf("Unmarshal = %+v, %v", out, err)
	}
	if err := json.Unmarshal([]byte(`{"kind":"llm.reqest"}`), &out); err == nil {
		t.Fatal("a misspelt kind decoded")
	}
}

func TestKindUnknown(t *testing.T) {
	t.Parallel()
	for _, k := range []Kind{0, Kind(len(KindNames()) + 1), 255} {
		if k.Known() || k.Boundary() {
			t.Errorf("kind %d: Known %v, Boundary %v", k, k.Known(), k.Boundary())
		}
		want := fmt.Sprintf("kind.%d", k)
		if b, _ := k.MarshalText(); k.String() != want || string(b) != want {
			t.Errorf("kind %d: String %q, MarshalText %q", k, k, b)
		}
	}
	for _, name := range []string{"", "llm.reqest", "LLM.REQUEST", " llm.request", "kind.4", "kind.200"} {
		k, err := ParseKind(name)
		if err == nil || k != 0 {
			t.Errorf("ParseKind(%q) = %d, %v; want an error", name, k, err)
			continue
		}
		if !strings.Contains(err.Error(), "unknown frame kind") || !strings.Contains(err.Error(), "llm.request, llm.response") {
			t.Errorf("ParseKind(%q): the error %q should name the known kinds", name, err)
		}
	}
	k := KindMarker
	if err := k.UnmarshalText([]byte("nonsense")); err == nil || k != 0 {
		t.Errorf("UnmarshalText(nonsense) = %d, %v", k, err)
	}
}

func TestKindBoundary(t *testing.T) {
	t.Parallel()
	for _, name := range KindNames() {
		k, _ := ParseKind(name)
		want := k == KindRunStart || k == KindRunEnd || k == KindStep
		if k.Boundary() != want {
			t.Errorf("%s: Boundary = %v", k, k.Boundary())
		}
	}
}

// TestPayloadKinds checks that every payload type, as a value and as the
// pointer Decode returns, says its own kind.
func TestPayloadKinds(t *testing.T) {
	t.Parallel()
	for k, mk := range payloadTypes {
		p := mk()
		if p.Kind() != k {
			t.Errorf("%T.Kind() = %s, want %s", p, p.Kind(), k)
		}
	}
	if k := (Unknown{K: 99}).Kind(); k != 99 {
		t.Errorf("Unknown{K: 99}.Kind() = %d", k)
	}
}

func TestDecodeUnknown(t *testing.T) {
	t.Parallel()
	var m memFile
	w, err := NewWriter(&m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(0, Unknown{K: 99, JSON: json.RawMessage(`{"new":true}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendFrame(Frame{Kind: KindMarker, Schema: 2, Payload: []byte(`{"label":7}`)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tp := openBytes(t, m.Bytes())
	for i, want := range []Unknown{{K: 99, JSON: json.RawMessage(`{"new":true}`)}, {K: KindMarker, JSON: json.RawMessage(`{"label":7}`)}} {
		f, err := tp.Frame(i)
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.Decode()
		u, ok := p.(Unknown)
		if err != nil || !ok || u.K != want.K || string(u.JSON) != string(want.JSON) {
			t.Errorf("frame %d (kind %d, schema %d) decoded to %#v, %v; want %#v", i, f.Kind, f.Schema, p, err, want)
		}
	}
	if f, _ := tp.Frame(0); f.Schema != 0 || f.Kind.String() != "kind.99" {
		t.Errorf("unknown kind written with schema %d as %s", f.Schema, f.Kind)
	}
	// A known kind whose payload is not its JSON is a FormatError.
	_, err = Frame{Kind: KindMarker, Schema: 1, Seq: 3, Offset: 64, Payload: []byte(`{"label":`)}.Decode()
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Frame != 3 || fe.Offset != 64 || !strings.Contains(fe.Msg, "marker payload") {
		t.Errorf("bad payload: %v", err)
	}
}

func TestUsageTotal(t *testing.T) {
	t.Parallel()
	if n := (Usage{Input: 100, Output: 20, Cached: 50, Reasoning: 7}).Total(); n != 120 {
		t.Errorf("Total = %d, want input plus output, 120", n)
	}
}
