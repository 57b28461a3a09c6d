package llmsim

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
)

// serveFiles answers an upload to OpenAI's /v1/files: a multipart form
// with a "purpose" field and a "file" part, answered with the file object.
func (s *Server) serveFiles(w http.ResponseWriter, r *http.Request, g ids, body []byte) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		s.writeError(w, g, false, http.StatusBadRequest, &reqError{msg: "expected a multipart/form-data body"})
		return
	}
	var purpose, filename string
	size := -1
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			s.writeError(w, g, false, http.StatusBadRequest, &reqError{msg: "malformed multipart body: " + err.Error()})
			return
		}
		data, _ := io.ReadAll(p)
		switch p.FormName() {
		case "purpose":
			purpose = string(data)
		case "file":
			filename, size = p.FileName(), len(data)
		}
	}
	switch {
	case size < 0:
		s.writeError(w, g, false, http.StatusBadRequest, missing("file"))
		return
	case purpose == "":
		s.writeError(w, g, false, http.StatusBadRequest, missing("purpose"))
		return
	}
	s.setHeaders(w, g, false, "")
	w.Write(marshal(struct { //nolint:errcheck // the client may be gone
		ID        string `json:"id"`
		Object    string `json:"object"`
		Bytes     int    `json:"bytes"`
		CreatedAt int64  `json:"created_at"`
		Filename  string `json:"filename"`
		Purpose   string `json:"purpose"`
		Status    string `json:"status"`
	}{g.make("file-", "file", 22, base58), "file", size, g.created(), filename, purpose, "processed"}))
}
