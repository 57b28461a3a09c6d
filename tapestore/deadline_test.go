package tapestore

import (
	"fmt"
	"io"
	"net/url"
	"syscall"
	"testing"
)

// TestCutConnectionIsTriedAgain: an upload whose connection the store
// dropped ("Post ...: EOF", fake-gcs-server killed mid-upload) failed at
// once, where a stall is tried again; a listing's end (io.EOF alone) and
// what the driver's client tried again already are not.
func TestCutConnectionIsTriedAgain(t *testing.T) {
	cut := &url.Error{Op: "Post", URL: "http://127.0.0.1:1/upload", Err: io.EOF}
	reset := &url.Error{Op: "Put", URL: "http://127.0.0.1:1/o", Err: fmt.Errorf("write: %w", syscall.ECONNRESET)}
	for _, err := range []error{cut, fmt.Errorf("store: %w", cut), reset} {
		if !cutConnection(err) || !retryable(err) {
			t.Errorf("%v: cut %v, retryable %v; want both", err, cutConnection(err), retryable(err))
		}
	}
	for _, err := range []error{io.EOF, fmt.Errorf("list: %w", io.EOF)} {
		if cutConnection(err) || retryable(err) {
			t.Errorf("%v: a listing's end taken for a cut connection", err)
		}
	}
}
