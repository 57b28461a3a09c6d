package export

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestBlobValueStreamed: a blob's value is written piece by piece as
// json.Marshal wrote it whole (a 256 MiB blob took 8 GB that way):
// characters across a piece's edge, escapes, bytes that are not UTF-8.
func TestBlobValueStreamed(t *testing.T) {
	for _, data := range [][]byte{
		nil,
		[]byte(`plain "quoted" <tag> & \ back`),
		[]byte(strings.Repeat("a", 64<<10-1) + "é€😀" + strings.Repeat("\x00\n", 100)),
		append(bytes.Repeat([]byte("x"), 70000), 0xff, 0xfe),
	} {
		want := struct {
			Size   int    `json:"size"`
			Text   string `json:"text,omitempty"`
			Base64 string `json:"base64,omitempty"`
		}{Size: len(data)}
		if utf8.Valid(data) {
			want.Text = string(data)
		} else {
			want.Base64 = base64.StdEncoding.EncodeToString(data)
		}
		wb, _ := json.Marshal(want)
		var got bytes.Buffer
		w := bufio.NewWriter(&got)
		w.WriteString(`{"size":` + jsonInt(len(data)))
		writeBlobValue(w, data)
		w.WriteString("}")
		w.Flush()
		if !bytes.Equal(got.Bytes(), wb) {
			t.Errorf("%d bytes: streamed value differs from json.Marshal's (%d and %d bytes)", len(data), got.Len(), len(wb))
		}
	}
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }
