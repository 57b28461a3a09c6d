package export

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/jukebox-os/jukebox/internal/tapegen"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// discard is an exporter that takes every span and sends it nowhere: the
// benchmarks measure jukebox's side of an export, not a receiver's.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkExport50Steps is `export otlp` of the 50-step tape short of the
// network: open, read every frame and blob, make the spans with the SDK
// and batch them (target: under 50 ms plus the receiver's time).
// BenchmarkRead50Steps, its peer, only reads the same tape the same way.
func BenchmarkExport50Steps(b *testing.B) {
	path := tape50(b)
	b.ReportAllocs()
	for b.Loop() {
		t, err := tapefmt.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		bt := newBatcher(discard{}, 4096, false)
		s, err := newSink(trace.TraceID(t.ID()), "bench", &tapefmt.RunStart{}, bt, nil, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		c := newConverter(Options{}, t.ID(), t.Created(), tapeBlobs(t), s.span, s.measure)
		for f, err := range t.All() {
			if err != nil {
				b.Fatal(err)
			}
			if err := c.frame(f); err != nil {
				b.Fatal(err)
			}
		}
		c.finish(c.last)
		bt.close(context.Background())
		t.Close()
	}
}

func BenchmarkRead50Steps(b *testing.B) {
	path := tape50(b)
	b.ReportAllocs()
	for b.Loop() {
		t, err := tapefmt.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		for f, err := range t.All() {
			if err != nil {
				b.Fatal(err)
			}
			p, err := f.Decode()
			if err != nil {
				b.Fatal(err)
			}
			for _, h := range tapefmt.BlobRefs(p) {
				if !h.IsZero() {
					t.Blob(h)
				}
			}
		}
		t.Close()
	}
}

func tape50(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "50.jbx")
	if err := tapegen.WriteFile(path, tapegen.Spec{Steps: 50, Chunks: 72, Model: "gpt-4o-mini"}); err != nil {
		b.Fatal(err)
	}
	return path
}
