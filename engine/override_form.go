package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
)

// formBoundary is the boundary of a multipart/form-data body (a file
// upload: an audio transcription, a file for a batch), read from its
// first line; "" when body is not one.
func formBoundary(body []byte) string {
	line, _, ok := bytes.Cut(body, []byte("\r\n"))
	if !ok || !bytes.HasPrefix(line, []byte("--")) || len(line) < 3 || len(line) > 72 {
		return ""
	}
	return string(line[2:])
}

// applyForm applies the overrides to a multipart form: the model and the
// temperature are its fields of those names (added when missing), a field
// to set is a form field named by a plain key, and a merge patch's
// top-level keys set (null: drop) form fields. A system prompt has no
// place in a form.
func (o Overrides) applyForm(body []byte, boundary string) ([]byte, error) {
	if o.SystemPrompt != nil {
		return nil, errors.New("a multipart form (a file upload) has no system prompt to set")
	}
	set := map[string]*string{}
	if o.Model != "" {
		set["model"] = &o.Model
	}
	if o.Temperature != nil {
		v := strconv.FormatFloat(*o.Temperature, 'g', -1, 64)
		set["temperature"] = &v
	}
	required := map[string]bool{}
	for _, s := range o.Set {
		v, err := formValue(s.Value)
		if err != nil || v == nil {
			return nil, fmt.Errorf("set %s in a multipart form: the value must be a string or a number", s.Path)
		}
		set[s.Path], required[s.Path] = v, true
	}
	if len(o.Patch) > 0 {
		var p map[string]json.RawMessage
		if err := json.Unmarshal(o.Patch, &p); err != nil {
			return nil, fmt.Errorf("the patch for a multipart form must be a JSON object: %v", err)
		}
		for k, raw := range p {
			v, err := formValue(raw)
			if err != nil {
				return nil, fmt.Errorf("patch %s in a multipart form: %v", k, err)
			}
			set[k] = v
		}
	}
	return rewriteForm(body, boundary, set, required)
}

// formValue is a JSON string or number as a form field's text; nil for
// null (the field is dropped).
func formValue(raw json.RawMessage) (*string, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return &x, nil
	case float64, bool:
		s := strings.TrimSpace(string(raw))
		return &s, nil
	}
	return nil, errors.New("only a string, a number, true, false or null fits a form field")
}

// rewriteForm copies the form, its parts byte for byte but the fields in
// set (a nil value drops the field); fields of set that it lacks are added
// at its end, but for required ones, which are an error.
func rewriteForm(body []byte, boundary string, set map[string]*string, required map[string]bool) ([]byte, error) {
	r := multipart.NewReader(bytes.NewReader(body), boundary)
	var out bytes.Buffer
	w := multipart.NewWriter(&out)
	if err := w.SetBoundary(boundary); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for {
		p, err := r.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not a JSON object nor a readable multipart form: %v", err)
		}
		name := p.FormName()
		v, over := set[name]
		if over && p.FileName() == "" {
			seen[name] = true
			if v == nil {
				continue
			}
		}
		pw, err := w.CreatePart(p.Header)
		if err != nil {
			return nil, err
		}
		if over && p.FileName() == "" {
			io.WriteString(pw, *v)
		} else if _, err := io.Copy(pw, p); err != nil {
			return nil, err
		}
	}
	if err := addFields(w, set, seen, required); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// addFields adds the fields of set the form did not have (seen), but for
// required ones, which are an error.
func addFields(w *multipart.Writer, set map[string]*string, seen, required map[string]bool) error {
	for _, name := range slices.Sorted(maps.Keys(set)) {
		v := set[name]
		switch {
		case seen[name] || v == nil:
		case required[name]:
			return fmt.Errorf("set %s: the multipart form has no field %q", name, name)
		default:
			h := textproto.MIMEHeader{"Content-Disposition": {fmt.Sprintf(`form-data; name=%q`, name)}}
			pw, err := w.CreatePart(h)
			if err != nil {
				return err
			}
			io.WriteString(pw, *v)
		}
	}
	return nil
}
