package export

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// batchesExporter keeps the size of each batch it is given.
type batchesExporter struct {
	mu      sync.Mutex
	sizes   []int
	longest int
}

func (e *batchesExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, s := range spans {
		n += spanBytes(s)
		for _, kv := range s.Attributes() {
			e.longest = max(e.longest, len(kv.Value.AsString()))
		}
	}
	e.sizes = append(e.sizes, n)
	return nil
}
func (e *batchesExporter) Shutdown(context.Context) error { return nil }

// TestBatchesFitAReceiver: a run with a few tool results of megabytes
// each (content on) went as one batch over a collector's 4 MiB gRPC
// limit, refused whole with every span of the run ("received message
// larger than max (5002406 vs. 4194304)"). An attribute is cut at 1 MiB
// (or as OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT says), and a batch holds at
// most 3 MiB of them.
func TestBatchesFitAReceiver(t *testing.T) {
	exp := &batchesExporter{}
	b := newBatcher(exp, 64, false)
	s, err := newSink(trace.TraceID{1}, "agent", &tapefmt.RunStart{}, b, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 5<<20)
	for range 4 {
		_, sp := s.tracer.Start(context.Background(), "execute_tool huge")
		sp.SetAttributes(attribute.String("gen_ai.tool.call.result", big))
		sp.End()
	}
	for range 20 {
		_, sp := s.tracer.Start(context.Background(), "chat")
		sp.SetAttributes(attribute.String("gen_ai.input.messages", strings.Repeat("y", 400<<10)))
		sp.End()
	}
	b.close(context.Background())
	if exp.longest > attrValueLimit {
		t.Errorf("an attribute of %d bytes went out, over the %d limit", exp.longest, attrValueLimit)
	}
	for i, n := range exp.sizes {
		if n > batchBytes+attrValueLimit/2 {
			t.Errorf("batch %d of %d: %d bytes, over a receiver's 4 MiB", i, len(exp.sizes), n)
		}
	}
	if len(exp.sizes) < 3 {
		t.Errorf("%d batches for 12 MiB of attributes", len(exp.sizes))
	}

	t.Setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "1000")
	if got := valueLimit(); got != 1000 {
		t.Errorf("the environment's limit: %d", got)
	}
}
