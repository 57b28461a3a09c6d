package tapefmt_test

import (
	"bytes"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// scanFilter masks "secret" in streamed bodies, and counts the bodies
// its scans finish and those its Stream reads whole.
type scanFilter struct{ scanned, whole *int }

func (scanFilter) Payload(p tapefmt.Payload) tapefmt.Payload { return p }
func (scanFilter) Blob(b []byte) []byte                      { return b }
func (f scanFilter) Stream(b []byte, c tapefmt.Chunks) ([]byte, tapefmt.Chunks) {
	*f.whole++
	return bytes.ReplaceAll(b, []byte("secret"), []byte("******")), c
}
func (f scanFilter) NewStream() tapefmt.StreamScanner { return &byteScan{f: f} }

type byteScan struct {
	f    scanFilter
	seen []byte
}

func (s *byteScan) Write(p []byte) { s.seen = append(s.seen, p...) }
func (s *byteScan) Finish(b []byte, c tapefmt.Chunks) ([]byte, tapefmt.Chunks) {
	if !bytes.Equal(b, s.seen) {
		return s.f.Stream(b, c)
	}
	*s.f.scanned++
	return bytes.ReplaceAll(b, []byte("secret"), []byte("******")), c
}

// TestPutStreamScanned: a body scanned as it arrived is stored from its
// scan, masked as PutStream masks it; a scan of another Writer, or none,
// is PutStream; a Writer without a Filter has no scan.
func TestPutStreamScanned(t *testing.T) {
	var scanned, whole int
	f := scanFilter{&scanned, &whole}
	var buf, other bytes.Buffer
	w, err := tapefmt.NewWriter(&buf, tapefmt.Options{Filter: f, Sync: tapefmt.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	w2, err := tapefmt.NewWriter(&other, tapefmt.Options{Filter: f, Sync: tapefmt.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("data: the secret\n\ndata: [DONE]\n\n")
	masked, _, err := w.PutStream("l", body, nil)
	if err != nil {
		t.Fatal(err)
	}
	scan := w.NewStreamScan()
	scan.Write(body[:7])
	scan.Write(body[7:])
	if h, _, err := w.PutStreamScanned("l", body, nil, scan); err != nil || h != masked || scanned != 1 {
		t.Fatalf("scanned: %v %v, %d scans finished; want %v as PutStream stores it, from the scan", h, err, scanned, masked)
	}
	whole = 0
	if h, _, err := w.PutStreamScanned("l", body, nil, w2.NewStreamScan()); err != nil || h != masked || whole != 1 {
		t.Fatalf("another Writer's scan: %v %v, %d bodies read whole; want PutStream's %v", h, err, whole, masked)
	}
	if h, _, err := w.PutStreamScanned("l", body, nil, nil); err != nil || h != masked || whole != 2 {
		t.Fatalf("no scan: %v %v; want PutStream's %v", h, err, masked)
	}
	plain, err := tapefmt.NewWriter(&other, tapefmt.Options{Sync: tapefmt.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	if s := plain.NewStreamScan(); s != nil {
		t.Fatalf("a Writer without a Filter gave a scan %v", s)
	}
}
