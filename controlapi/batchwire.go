package controlapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"sync"
	"unicode/utf8"
)

// BatchContentType is the second encoding of a batch's body, which the
// Python SDK sends: the contents of its writes follow the JSON as they
// are, so that neither side encodes, escapes or scans them as JSON text.
// The body is a BinaryBatch in JSON, a newline, then the contents of the
// operations that have one, one after another.
const BatchContentType = "application/x-jukebox-batch"

// BinaryBatch is the JSON that opens a batch sent as BatchContentType.
type BinaryBatch struct {
	Ops []BinaryOp `json:"ops"`
}

// BinaryOp is a BatchOp whose write content (the body's "content") comes
// after the JSON: Content bytes of it, in order. The body holds the rest
// of the write: path, mode and, with "base64": true, contents that are
// bytes (not text) and are written as they come; text is UTF-8.
type BinaryOp struct {
	BatchOp
	Content *int `json:"content,omitempty"`
}

// readBatch reads a batch's body in either encoding. A write of a binary
// batch gets its body as its own request would have had it (content in
// the JSON, base64 for bytes), compact, and that request decoded.
func readBatch(w http.ResponseWriter, r *http.Request, b *Batch) bool {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != BatchContentType {
		return read(w, r, required, b)
	}
	// Read into a buffer of the announced length: grown by doubling
	// instead, a batch of 200 writes of 4 KiB copied itself 8 times.
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= MaxBatchBody {
		buf.Grow(int(n) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, MaxBatchBody))
	data := buf.Bytes()
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		err = fmt.Errorf("the batch is over %d MiB: send its writes in more batches (one write's content is at most that)", MaxBatchBody>>20)
	}
	if err == nil {
		err = decodeBinaryBatch(data, b)
	}
	if err != nil {
		answer(w, nil, Fail(http.StatusBadRequest, TypeBadRequest, err))
		return false
	}
	return true
}

// decodeBinaryBatch decodes data, a BatchContentType body, into b.
func decodeBinaryBatch(data []byte, b *Batch) error {
	head, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return fmt.Errorf("%s: no newline after the JSON", BatchContentType)
	}
	var bb BinaryBatch
	dec := json.NewDecoder(bytes.NewReader(head))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&bb); err != nil {
		return fmt.Errorf("%s: %w", BatchContentType, err)
	}
	b.Ops = make([]BatchOp, len(bb.Ops))
	for i, op := range bb.Ops {
		b.Ops[i] = op.BatchOp
		if op.Content == nil {
			continue
		}
		n := *op.Content
		if n < 0 || n > len(rest) {
			return fmt.Errorf("batch op %d: content of %d bytes, %d left in the body", i, n, len(rest))
		}
		var err error
		b.Ops[i], err = withContent(op.BatchOp, rest[:n])
		if tl, ok := errors.AsType[*tooLargeToTape](err); ok {
			// Refused when served, after the operations before it.
			b.Ops[i] = op.BatchOp
			b.Ops[i].refused = Fail(http.StatusRequestEntityTooLarge, TypeBadRequest, tl)
		} else if err != nil {
			return fmt.Errorf("batch op %d: %w", i, err)
		}
		rest = rest[n:]
	}
	if len(rest) != 0 {
		return fmt.Errorf("%s: %d bytes after the last operation's content", BatchContentType, len(rest))
	}
	return nil
}

// withContent is op, a write whose body lacks its content, with content:
// checked and decoded now, its body as its own request would have had it
// built when first asked for (op.body). Staging the write needs only the
// decoded request; the body is the tape's, which a recording writes
// beside the staging of the next operation.
func withContent(op BatchOp, content []byte) (BatchOp, error) {
	if op.Op != "write" {
		return op, fmt.Errorf("a %s has no content", op.Op)
	}
	var req Write
	body := bytes.TrimSpace(op.Body)
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if len(body) == 0 || body[0] != '{' {
		return op, fmt.Errorf("write: the body is not a JSON object")
	}
	if err := dec.Decode(&req); err != nil {
		return op, fmt.Errorf("write: %w", err)
	}
	var keys map[string]json.RawMessage
	json.Unmarshal(body, &keys) // an object: decoded above
	if _, ok := keys["content"]; ok {
		return op, fmt.Errorf("write: content both in the body and after it")
	}
	if !req.Base64 && !utf8.Valid(content) {
		return op, fmt.Errorf("write %s: text content that is not UTF-8 (bytes go with \"base64\": true)", req.Path)
	}
	var head bytes.Buffer
	head.Grow(len(body))
	if err := json.Compact(&head, body); err != nil {
		return op, fmt.Errorf("write: %w", err)
	}
	lazy := &lazyBody{head: head.Bytes(), content: content, base64: req.Base64}
	// Counted only where it could matter (at most six bytes a byte).
	if len(lazy.head)+6*len(content)+16 > MaxTapedBody {
		if n := lazy.size(); n > MaxTapedBody {
			form := "as JSON text (a control character takes six bytes there, a quote or backslash two)"
			if req.Base64 {
				form = "in base64"
			}
			return op, &tooLargeToTape{fmt.Errorf("the content of %s (%d bytes) takes %d bytes on the tape %s, over the %d MiB "+
				"a write's request holds there: nothing of it is staged; write it in the booth (jukebox record --booth), outside the transaction, or in parts",
				req.Path, len(content), n, form, MaxTapedBody>>20)}
		}
	}
	op.Body, op.lazy = nil, lazy
	req.data, req.Base64 = content, false // what the handler writes: the bytes themselves
	op.decoded, op.compact = &req, true
	return op, nil
}

// lazyBody is the body of a binary batch's write as its own request would
// have had it (content in the JSON, base64 for bytes), compact, built
// when first asked for.
type lazyBody struct {
	once    sync.Once
	head    []byte // the body's compact JSON, without the content
	content []byte
	base64  bool
	body    []byte
}

// size is len(l.get()), counted without building it.
func (l *lazyBody) size() int {
	n := len(l.head) - 1 + len(`"content":`) + 1 // the head without its brace, the key, the brace
	if len(l.head) > 2 {
		n++ // the comma
	}
	if l.base64 {
		return n + base64.StdEncoding.EncodedLen(len(l.content)) + 2
	}
	return n + jsonStringLen(l.content)
}

// tooLargeToTape is a binary batch's write whose request would not fit
// on the tape (MaxTapedBody): refused in its turn, 413 (BatchOp.refused).
type tooLargeToTape struct{ error }

func (e *tooLargeToTape) Unwrap() error { return e.error }

func (l *lazyBody) get() []byte {
	l.once.Do(func() {
		var lit []byte
		if l.base64 {
			lit = make([]byte, 0, base64.StdEncoding.EncodedLen(len(l.content))+2)
			lit = append(base64.StdEncoding.AppendEncode(append(lit, '"'), l.content), '"')
		} else {
			lit = appendJSONString(make([]byte, 0, len(l.content)+len(l.content)/16+2), l.content)
		}
		b := make([]byte, 0, len(l.head)+len(lit)+12)
		b = append(b, l.head[:len(l.head)-1]...) // without the closing brace
		if len(l.head) > 2 {
			b = append(b, ',')
		}
		b = append(append(append(b, `"content":`...), lit...), '}')
		l.body = b
	})
	return l.body
}

// body is op's body: as it came, or as its own request would have had it.
func (op *BatchOp) body() []byte {
	if op.lazy != nil {
		return op.lazy.get()
	}
	return op.Body
}

// bodyReader reads op's body, built when first read.
type bodyReader struct {
	op *BatchOp
	r  *bytes.Reader
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.r == nil {
		b.r = bytes.NewReader(b.op.body())
	}
	return b.r.Read(p)
}

// appendJSONString appends text, valid UTF-8, to dst as a JSON string:
// quoted, with only what JSON requires escaped (the quote, the backslash
// and control characters). encoding/json also escapes <, >, & and
// U+2028/U+2029 for HTML, through a copy of the text as a string, which
// cost a staged write of a few kilobytes more than its HTTP round trip;
// a tape matches bodies as JSON values, which are the same.
func appendJSONString(dst, text []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i, c := range text {
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, text[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	return append(append(dst, text[start:]...), '"')
}

// jsonStringLen is len(appendJSONString(nil, text)).
func jsonStringLen(text []byte) int {
	n := len(text) + 2
	for _, c := range text {
		switch {
		case c >= 0x20 && c != '"' && c != '\\':
		case c == '"', c == '\\', c == '\n', c == '\r', c == '\t':
			n++
		default:
			n += 5
		}
	}
	return n
}

// batchKey keys a batched operation in its request's context.
type batchKey struct{}

func withOp(ctx context.Context, op *BatchOp) context.Context {
	return context.WithValue(ctx, batchKey{}, op)
}

func opOf(ctx context.Context) *BatchOp {
	op, _ := ctx.Value(batchKey{}).(*BatchOp)
	return op
}

// BaseOf is the FileBase a batch gave the operation served with ctx, nil
// for an operation that came alone or without one.
func BaseOf(ctx context.Context) *FileBase {
	if op := opOf(ctx); op != nil {
		return op.Base
	}
	return nil
}

// CompactBody says whether the body of the request served with ctx is
// compact JSON already (a write of a binary batch, which the server
// wrote so): a caller that keeps it compacted need not do it again.
func CompactBody(ctx context.Context) bool {
	op := opOf(ctx)
	return op != nil && op.compact
}

// BatchedBody is the body of the batched operation served with ctx, as
// the batch gave it (the request's Body reads the same bytes), built when
// the function is first called; false for a request that came alone.
func BatchedBody(ctx context.Context) (func() []byte, bool) {
	if op := opOf(ctx); op != nil {
		return op.body, true
	}
	return nil, false
}

// decodedBody is the request of the operation served with ctx when the
// batch decoded it already, nil otherwise.
func decodedBody(ctx context.Context) any {
	if op := opOf(ctx); op != nil {
		return op.decoded
	}
	return nil
}

// Binary is b encoded as BatchContentType: each write's content taken
// out of its body (decoded from base64 when the body says so) and sent
// after the JSON as it is.
func (b Batch) Binary() ([]byte, error) {
	var head BinaryBatch
	var contents [][]byte
	for i, op := range b.Ops {
		bo := BinaryOp{BatchOp: op}
		if op.Op == "write" && len(op.Body) > 0 {
			var w Write
			var keys map[string]json.RawMessage
			if err := json.Unmarshal(op.Body, &w); err != nil {
				return nil, fmt.Errorf("batch op %d: %w", i, err)
			}
			if err := json.Unmarshal(op.Body, &keys); err != nil {
				return nil, fmt.Errorf("batch op %d: %w", i, err)
			}
			if w.Content != nil {
				content := []byte(*w.Content)
				if w.Base64 {
					var err error
					if content, err = base64.StdEncoding.DecodeString(*w.Content); err != nil {
						return nil, fmt.Errorf("batch op %d: content: %w", i, err)
					}
				}
				delete(keys, "content")
				body, err := json.Marshal(keys)
				if err != nil {
					return nil, err
				}
				n := len(content)
				bo.Body, bo.Content = body, &n
				contents = append(contents, content)
			}
		}
		head.Ops = append(head.Ops, bo)
	}
	data, err := json.Marshal(head)
	if err != nil {
		return nil, err
	}
	data = append(data, '\n')
	for _, c := range contents {
		data = append(data, c...)
	}
	return data, nil
}
