package tapefmt_test

import (
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/tapegen"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// Spec50 is the benchmark run: 50 streamed steps with resent history, about
// 4,000 frames (the agent echoes each of the 72 chunks per step to stdout).
var spec50 = tapegen.Spec{Steps: 50, Chunks: 72, Model: "gpt-4o-mini"}

func writeRun(b *testing.B, spec tapegen.Spec) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "run.jbx")
	if err := tapegen.WriteFile(path, spec); err != nil {
		b.Fatal(err)
	}
	tapetest.Verify(b, path)
	return path
}

func benchVerify(b *testing.B, opts tapefmt.VerifyOptions) {
	path := writeRun(b, spec50)
	frames := 0
	b.ResetTimer()
	for b.Loop() {
		t, err := tapefmt.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		rep, err := t.Verify(opts)
		if err != nil {
			b.Fatal(err)
		}
		frames = rep.Frames
		t.Close()
	}
	b.ReportMetric(float64(frames), "frames")
}

// BenchmarkOpenVerifyWalk opens the 50-step tape, checks every frame's CRC,
// the hash chain and the index while walking every frame. Target: < 0.4 ms.
func BenchmarkOpenVerifyWalk(b *testing.B) { benchVerify(b, tapefmt.VerifyOptions{}) }

// BenchmarkFullVerify also decodes every blob and re-hashes it, and decodes
// every payload to check the blobs it names.
func BenchmarkFullVerify(b *testing.B) { benchVerify(b, tapefmt.VerifyOptions{Blobs: true}) }

// BenchmarkSeek reads a random frame of a 1,000,000-frame tape. Target:
// O(1), median under 20 µs; the median and p99 are reported as metrics.
func BenchmarkSeek(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big.jbx")
	w, err := tapefmt.Create(path, tapefmt.Options{Sync: tapefmt.SyncNever})
	if err != nil {
		b.Fatal(err)
	}
	const n = 1_000_000
	for i := range n {
		if _, err := w.Append(0, tapefmt.Output{Fd: 1, Data: tapefmt.Bytes("token ")}); err != nil {
			b.Fatal(err)
		}
		if i%100 == 99 {
			w.Commit()
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	tapetest.Verify(b, path)
	t, err := tapefmt.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	r := rand.New(rand.NewPCG(1, 2))
	var lat []time.Duration
	read := make([]bool, t.Len())
	b.ResetTimer()
	for b.Loop() {
		i := r.IntN(t.Len())
		start := time.Now()
		f, err := t.Frame(i)
		lat = append(lat, time.Since(start))
		if err != nil || f.Seq != uint64(i) {
			b.Fatalf("frame %d: %v", i, err)
		}
		read[i] = true
	}
	// Every frame the loop read decodes (outside the timer).
	for i, ok := range read {
		if !ok {
			continue
		}
		f, err := t.Frame(i)
		if err == nil {
			_, err = f.Decode()
		}
		if err != nil {
			b.Fatalf("frame %d does not decode: %v", i, err)
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "median-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkAppend appends small frames with fsync off. Target: at least
// 200,000 frames per second on one core.
func BenchmarkAppend(b *testing.B) {
	w, err := tapefmt.NewWriter(io.Discard, tapefmt.Options{Sync: tapefmt.SyncNever})
	if err != nil {
		b.Fatal(err)
	}
	p := tapefmt.Output{Fd: 1, Data: tapefmt.Bytes("hello, world\n")}
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		if _, err := w.Append(0, p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "frames/s")
	// The loop's tape goes to io.Discard; the same frames written the same
	// way to a file of their own must read back (outside the timer).
	path := filepath.Join(b.TempDir(), "append.jbx")
	if err := tapefmt.CreateWith(path, tapefmt.Options{Sync: tapefmt.SyncNever}, func(w *tapefmt.Writer) error {
		for range 10_000 {
			if _, err := w.Append(0, p); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	tapetest.Verify(b, path)
}
