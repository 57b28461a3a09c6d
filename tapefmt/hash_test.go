package tapefmt

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestHash(t *testing.T) {
	t.Parallel()
	// The BLAKE3 test vector for no input.
	const empty = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
	h := HashOf(nil)
	if h.String() != empty || h.Short() != empty[:12] || h.IsZero() {
		t.Fatalf("HashOf(nil) = %s (short %s, zero %v)", h, h.Short(), h.IsZero())
	}
	if !(Hash{}).IsZero() {
		t.Error("the zero Hash is not IsZero")
	}
	b, err := h.MarshalText()
	if err != nil || string(b) != empty {
		t.Fatalf("MarshalText = %s, %v", b, err)
	}
	var back Hash
	if err := back.UnmarshalText(b); err != nil || back != h {
		t.Fatalf("UnmarshalText = %s, %v", back, err)
	}
	if p, err := ParseHash(strings.ToUpper(empty)); err != nil || p != h {
		t.Errorf("ParseHash(upper case) = %s, %v", p, err)
	}
	j, err := json.Marshal(struct {
		H Hash `json:"h"`
	}{h})
	if err != nil || string(j) != `{"h":"`+empty+`"}` {
		t.Errorf("JSON = %s, %v", j, err)
	}
}

func TestParseHashErrors(t *testing.T) {
	t.Parallel()
	good := HashOf([]byte("x")).String()
	for name, s := range map[string]string{
		"empty": "", "short": good[:63], "long": good + "0", "not hex": "zz" + good[2:],
		"spaces": " " + good[1:], "prefixed": "0x" + good[2:],
	} {
		h, err := ParseHash(s)
		if err == nil || !strings.HasPrefix(err.Error(), "hash") {
			t.Errorf("%s: ParseHash(%q) = %s, %v; want an error", name, s, h, err)
		}
		if err := h.UnmarshalText([]byte(s)); err == nil {
			t.Errorf("%s: UnmarshalText accepted %q", name, s)
		}
	}
}

func TestBytesJSON(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"hi\n":         `"hi\n"`,
		"":             `""`,
		"\xff\x00ab":   `{"base64":"/wBhYg=="}`,
		"ok \xc3(\x80": `{"base64":"b2sgwyiA"}`,
	} {
		b, err := json.Marshal(Bytes(in))
		if err != nil || string(b) != want {
			t.Errorf("Marshal(%q) = %s, %v; want %s", in, b, err, want)
			continue
		}
		var out Bytes
		if err := json.Unmarshal(b, &out); err != nil || !bytes.Equal(out, []byte(in)) {
			t.Errorf("Unmarshal(%s) = %q, %v; want %q", b, out, err, in)
		}
	}
	// Strings read as encoding/json reads them, on the fast way for plain
	// ones (escapes, invalid UTF-8 and the rest go the long way).
	for _, in := range []string{`"plain text, é and 日本"`, `"tab\tand \u003c \"q\" \\"`, `"\ud83d\ude00"`,
		"\"raw \xff byte\"", `""`, `"a"`, `"/ and \/"`} {
		var want string
		werr := json.Unmarshal([]byte(in), &want)
		var got Bytes
		gerr := json.Unmarshal([]byte(in), &got)
		if (werr == nil) != (gerr == nil) || string(got) != want {
			t.Errorf("Unmarshal(%s) = %q, %v; encoding/json reads %q, %v", in, got, gerr, want, werr)
		}
	}
	var out Bytes
	for _, bad := range []string{`{"base64":"!"}`, `7`, `{"base64":`, `"unended`, "\"ctl \x01\""} {
		if err := json.Unmarshal([]byte(bad), &out); err == nil {
			t.Errorf("Unmarshal(%s) accepted: %q", bad, out)
		}
	}
}

func TestFormatErrorText(t *testing.T) {
	t.Parallel()
	if s := formatErr(60, "header checksum %s", "mismatch").Error(); s != "offset 60: header checksum mismatch" {
		t.Errorf("formatErr: %q", s)
	}
	if s := frameErr(189, 1, "checksum mismatch").Error(); s != "frame 1 at offset 189: checksum mismatch" {
		t.Errorf("frameErr: %q", s)
	}
}
