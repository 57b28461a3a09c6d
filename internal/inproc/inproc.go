// Package inproc serves HTTP requests in process, for benchmarks that
// measure a handler without a network in between.
package inproc

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"sync"
)

// Transport is an http.RoundTripper that calls the handler with an
// httptest.ResponseRecorder. The recorder's body buffer is reused once the
// client closes the response, so a benchmark does not charge the handler
// for growing a fresh buffer per call.
type Transport struct {
	Handler http.Handler
	pool    sync.Pool
}

// RoundTrip serves r through the handler.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	if b, ok := t.pool.Get().(*bytes.Buffer); ok {
		b.Reset()
		rec.Body = b
	}
	t.Handler.ServeHTTP(rec, r)
	resp := rec.Result()
	resp.Body = &recycled{Reader: bytes.NewReader(rec.Body.Bytes()), buf: rec.Body, pool: &t.pool}
	return resp, nil
}

// recycled is a response body that returns its buffer to the pool on Close.
type recycled struct {
	*bytes.Reader
	buf  *bytes.Buffer
	pool *sync.Pool
}

func (b *recycled) Close() error {
	if b.buf != nil {
		b.pool.Put(b.buf)
		b.buf = nil
	}
	return nil
}
