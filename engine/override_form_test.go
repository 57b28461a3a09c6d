package engine_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
)

// TestForkOverridesAMultipartForm: the overrides of a fork at a file
// upload (an audio transcription, sent as multipart/form-data) set its
// form fields, the file untouched; this failed with a JSON parse error.
func TestForkOverridesAMultipartForm(t *testing.T) {
	t.Parallel()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	fw, _ := w.CreateFormFile("file", "a.wav")
	fw.Write([]byte("RIFF\x00\x01binary"))
	w.WriteField("model", "whisper-1")
	w.WriteField("language", "en")
	w.Close()
	temp := 0.5
	o := engine.Overrides{Model: "whisper-2", Temperature: &temp,
		Set: []engine.FieldSet{{Path: "language", Value: []byte(`"fr"`)}}}
	out, err := o.Apply("openai", "/v1/audio/transcriptions", body.Bytes(), true)
	if err != nil {
		t.Fatalf("Apply on a multipart form: %v", err)
	}
	got := map[string]string{}
	r := multipart.NewReader(bytes.NewReader(out), w.Boundary())
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the form does not read back: %v\n%s", err, out)
		}
		b, _ := io.ReadAll(p)
		got[p.FormName()] = string(b)
	}
	want := map[string]string{"file": "RIFF\x00\x01binary", "model": "whisper-2", "language": "fr", "temperature": "0.5"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("field %s = %q, want %q", k, got[k], v)
		}
	}
	missing := engine.Overrides{Set: []engine.FieldSet{{Path: "nope", Value: []byte(`"x"`)}}}
	if _, err := missing.Apply("openai", "/v1/audio/transcriptions", body.Bytes(), true); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("setting a field the form lacks: %v, want an error naming it", err)
	}
}
