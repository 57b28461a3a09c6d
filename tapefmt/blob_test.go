package tapefmt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// The shapes of content the blob tests store: what compresses well, what
// does not at all, and what agents actually send.
var shapes = []string{"repetitive", "random", "json"}

// content returns n bytes of shape, the same for the same seed. Beyond a
// MiB, compressible shapes repeat their first MiB.
func content(shape string, n int, seed uint64) []byte {
	if n > 1<<20 && shape != "random" {
		return bytes.Repeat(content(shape, 1<<20, seed), n>>20+1)[:n]
	}
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	b := make([]byte, 0, n+64)
	switch shape {
	case "repetitive":
		for len(b) < n {
			b = append(b, "abcabcabd"[:1+r.IntN(9)]...)
		}
	case "random":
		var key [32]byte
		key[0], key[1] = byte(seed), byte(n)
		b = b[:n]
		_, _ = rand.NewChaCha8(key).Read(b)
	case "json":
		words := []string{"role", "user", "assistant", "content", "the", "plan", "is", "to", "update", "tests"}
		b = append(b, `{"model":"gpt-4o","messages":[`...)
		for len(b) < n {
			b = fmt.Appendf(b, `{"role":%q,"content":"%s %d"},`, words[r.IntN(2)+1], words[r.IntN(len(words))], r.IntN(1000))
		}
	}
	return b[:n]
}

// mutated returns a copy of b with about a third of its middle changed, so
// that b stored after it in the same lane is a delta.
func mutated(b []byte) []byte {
	m := bytes.Clone(b)
	for i := len(m) / 3; i < 2*len(m)/3; i++ {
		m[i] ^= 0x5a
	}
	return m
}

// blobSet writes blobs with put, closes the tape, reads every blob back and
// checks it; it returns how many blobs used each encoding.
func blobSet(t testing.TB, put func(w *Writer) [][]byte) [4]int {
	t.Helper()
	var m memFile
	w, err := NewWriter(&m, Options{Sync: SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	want := put(w)
	if w.rawFallbacks != 0 {
		t.Errorf("%d blobs did not read back as encoded and were stored raw", w.rawFallbacks)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	verifyTape(t, m.Bytes())
	tp, err := NewReader(bytes.NewReader(m.Bytes()), int64(m.Len()))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range want {
		got, err := tp.Blob(HashOf(b))
		if err != nil {
			t.Fatalf("blob of %d bytes: %v", len(b), err)
		}
		if !bytes.Equal(got, b) {
			t.Fatalf("blob of %d bytes reads back as %d different bytes", len(b), len(got))
		}
	}
	if _, err := tp.Verify(VerifyOptions{Blobs: true}); err != nil {
		t.Fatal(err)
	}
	return encodings(t, tp)
}

// encodings counts the blob records of tp by encoding.
func encodings(t testing.TB, tp *Tape) [4]int {
	t.Helper()
	var n [4]int
	blobs, err := tp.blobTable()
	if err != nil {
		t.Fatal(err)
	}
	hb := make([]byte, blobHeaderSize)
	for _, loc := range blobs {
		if err := tp.readAt(hb, loc.off); err != nil {
			t.Fatal(err)
		}
		n[hb[1]]++
	}
	return n
}

// TestBlobRoundTripEverySize stores every size from 0 to 4,096 bytes of each
// shape, whole and as deltas of a near copy, and reads each back. Blobs of
// 64 to 255 bytes once came back as "zstd frame declares 0 bytes".
func TestBlobRoundTripEverySize(t *testing.T) {
	sizes := everySize(t)
	for _, shape := range shapes {
		t.Run(shape, func(t *testing.T) {
			t.Parallel()
			whole := blobSet(t, func(w *Writer) [][]byte {
				var all [][]byte
				for _, n := range sizes {
					b := content(shape, n, 1)
					mustPut(t, w, fmt.Sprint("lane ", n), b)
					all = append(all, b)
				}
				return all
			})
			deltas := blobSet(t, func(w *Writer) [][]byte {
				var all [][]byte
				for _, n := range sizes {
					b := content(shape, n, 2)
					base := mutated(b)
					mustPut(t, w, "lane", base)
					mustPut(t, w, "lane", b)
					all = append(all, base, b)
				}
				return all
			})
			if whole[encDelta]+whole[encDeltaZstd] != 0 {
				t.Errorf("blobs in lanes of their own were stored as deltas: %v", whole)
			}
			most := len(sizes) - 297 // at most 297 sizes (small ones) stay raw, as of all 4,097
			if deltas[encDelta]+deltas[encDeltaZstd] < most {
				t.Errorf("near copies in one lane were not stored as deltas: %v", deltas)
			}
			if shape != "random" && (whole[encZstd] < most || deltas[encDeltaZstd] < most) {
				t.Errorf("compressible %s content was not compressed: whole %v, deltas %v", shape, whole, deltas)
			}
		})
	}
}

// everySize is 0 to 4,096. Under the race detector, which makes the test
// take 20 s of CPU instead of 2, it is 0 to 1,024 (where encodings switch,
// and where the bug above was), one size in eight above that from an
// offset drawn each run and logged, and the sizes around the powers of two.
func everySize(t *testing.T) []int {
	var sizes []int
	if !testenv.Race {
		for n := 0; n <= 4096; n++ {
			sizes = append(sizes, n)
		}
		return sizes
	}
	off := rand.IntN(8)
	t.Logf("race detector on: sizes 0 to 1,024, and from 1,025 one in eight from offset %d", off)
	for n := 0; n <= 4096; n++ {
		pow := n&(n-1) == 0 || (n+1)&n == 0 || (n-1)&(n-2) == 0 // 2^k, 2^k-1, 2^k+1
		if n <= 1024 || (n-1025)%8 == off || pow {
			sizes = append(sizes, n)
		}
	}
	return sizes
}

// TestBlobRoundTripLarge stores random sizes up to the largest blob a tape
// holds, past the zstd window the encoder uses on its own.
func TestBlobRoundTripLarge(t *testing.T) {
	testenv.Short(t, "stores blobs of up to 256 MiB")
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	sizes := map[string][]int{
		"repetitive": {MaxBlobSize, 4097 + r.IntN(1<<20)},
		"random":     {9<<20 + r.IntN(8<<20), 4097 + r.IntN(64<<10)},
		"json":       {8<<20 + 1 + r.IntN(24<<20), 4097 + r.IntN(1<<20)},
	}
	if testenv.Race {
		// The race detector makes 256 MiB take minutes (and 33 MiB with
		// the sizes above 8 s of CPU): blobs just past the encoder's
		// 8 MiB window still cross it.
		sizes["repetitive"][0] = 9<<20 + r.IntN(1<<20)
		sizes["random"][0] = 9<<20 + r.IntN(1<<20)
		sizes["json"][0] = 8<<20 + 1 + r.IntN(1<<20)
	}
	for _, shape := range shapes {
		blobSet(t, func(w *Writer) [][]byte {
			var all [][]byte
			for _, n := range sizes[shape] {
				b := content(shape, n, 5)
				mustPut(t, w, "lane", b)
				all = append(all, b)
				if n <= maxLaneBlob {
					mustPut(t, w, "lane", mutated(b))
					all = append(all, mutated(b))
				}
			}
			return all
		})
	}
}

func mustPut(t testing.TB, w *Writer, laneName string, b []byte) {
	t.Helper()
	if _, err := w.PutBlob(laneName, b); err != nil {
		t.Fatal(err)
	}
}

// TestZstdFramesDeclareSize: every zstd frame the writer makes names its
// content size, which the reader checks against the blob header.
func TestZstdFramesDeclareSize(t *testing.T) {
	for _, shape := range shapes {
		for n := 0; n <= 2048; n++ {
			c := compress(content(shape, n, 6))
			if c == nil {
				continue
			}
			var zh zstd.Header
			if err := zh.Decode(c); err != nil {
				t.Fatal(err)
			}
			if !zh.HasFCS || zh.FrameContentSize != uint64(n) {
				t.Fatalf("%s, %d bytes: zstd frame declares %d bytes (has size: %v)", shape, n, zh.FrameContentSize, zh.HasFCS)
			}
		}
	}
}

// putRecord writes a blob record with the stored bytes and header fields
// given, as a hostile or older writer might, and a frame naming it.
func putRecord(t *testing.T, w *Writer, enc uint8, stored []byte, h Hash, rawLen int) {
	t.Helper()
	w.mu.Lock()
	bh := blobHeader{Encoding: enc, Stored: uint32(len(stored)), Hash: h, RawLen: uint32(rawLen)}
	w.blobs[h] = blobLoc{off: w.off, raw: bh.RawLen}
	err := w.write(bh.marshal(stored))
	w.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(0, ToolResult{ID: "t", Body: h}); err != nil {
		t.Fatal(err)
	}
}

// frameWithoutSize is a zstd frame of b that does not declare its content
// size, as EncodeAll wrote for inputs under 256 bytes before the fix and as
// a streaming encoder always writes.
func frameWithoutSize(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	enc, err := zstd.NewWriter(&out, zstd.WithEncoderCRC(false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := enc.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	var zh zstd.Header
	if err := zh.Decode(out.Bytes()); err != nil || zh.HasFCS {
		t.Fatalf("want a frame without a content size: %v, %+v", err, zh)
	}
	return out.Bytes()
}

// TestFramesWithoutSize: tapes written before the fix read back; a frame
// without a size that decodes to more than its blob header says is refused
// without allocating what it would decode to.
func TestFramesWithoutSize(t *testing.T) {
	var m memFile
	w, err := NewWriter(&m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	small := content("json", 147, 7)
	putRecord(t, w, encZstd, frameWithoutSize(t, small), HashOf(small), len(small))
	bomb := frameWithoutSize(t, make([]byte, 64<<20))
	fake := HashOf([]byte("a hundred bytes"))
	putRecord(t, w, encZstd, bomb, fake, 100)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tp, err := NewReader(bytes.NewReader(m.Bytes()), int64(m.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tp.Blob(HashOf(small)); err != nil || !bytes.Equal(got, small) {
		t.Fatalf("a frame without a size does not read back: %v", err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = tp.Blob(fake)
	runtime.ReadMemStats(&after)
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("a frame that decodes past its header: got %v, want a FormatError", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("refusing a 64 MiB zstd bomb allocated %d MiB", grew>>20)
	}
}

// FuzzRoundTrip writes what the fuzzer gives as blobs, whole and as deltas
// of one another, and reads each back.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{}, uint16(0))
	f.Add([]byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`), uint16(20))
	for _, n := range []int{63, 64, 100, 255, 256, 1024, 1025} {
		f.Add(content("json", n, 8), uint16(n/2))
		f.Add(content("repetitive", n, 8), uint16(n/3))
	}
	f.Fuzz(func(t *testing.T, data []byte, split uint16) {
		cut := int(split) % (len(data) + 1)
		edited := append(bytes.Clone(data[:cut]), append([]byte("inserted turn"), data[cut:]...)...)
		blobSet(t, func(w *Writer) [][]byte {
			all := [][]byte{data, data[:cut], edited, data[cut:]}
			for _, b := range all {
				mustPut(t, w, "lane", b)
			}
			mustPut(t, w, "alone", mutated(data))
			return append(all, mutated(data))
		})
	})
}

// TestHostileDeltaLengths: a delta whose prefix and suffix lengths add up
// past 2^64 (so their sum wraps to a small number) is refused, not a panic.
func TestHostileDeltaLengths(t *testing.T) {
	var m memFile
	w, err := NewWriter(&m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := content("json", 300, 9)
	baseOff := w.off
	putRecord(t, w, encRaw, base, HashOf(base), len(base))
	st := binary.LittleEndian.AppendUint64(nil, uint64(baseOff))
	st = binary.AppendUvarint(st, math.MaxUint64)
	st = binary.AppendUvarint(st, 1)
	fake := HashOf([]byte("wrapped"))
	putRecord(t, w, encDelta, st, fake, 10)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tp, err := NewReader(bytes.NewReader(m.Bytes()), int64(m.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var fe *FormatError
	if _, err := tp.Blob(fake); !errors.As(err, &fe) || !strings.Contains(err.Error(), "delta takes") {
		t.Fatalf("wrapping delta lengths: got %v, want a FormatError", err)
	}
}

// TestClaimBeyondZstdRatio: a few bytes of zstd whose blob header claims
// 256 MiB are refused before anything that size is allocated.
func TestClaimBeyondZstdRatio(t *testing.T) {
	var m memFile
	w, err := NewWriter(&m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	small := frameWithoutSize(t, []byte("tiny"))
	fake := HashOf([]byte("claims a lot"))
	putRecord(t, w, encZstd, small, fake, MaxBlobSize)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tp, err := NewReader(bytes.NewReader(m.Bytes()), int64(m.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = tp.Blob(fake)
	runtime.ReadMemStats(&after)
	var fe *FormatError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "cannot decode to") {
		t.Fatalf("got %v, want a FormatError naming the claim", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Errorf("refusing the claim allocated %d MiB", grew>>20)
	}
}

// TestReadsBack: the writer's check accepts what encodes right and refuses
// stored bytes that do not give the blob back (it then stores it raw).
func TestReadsBack(t *testing.T) {
	data := content("json", 500, 10)
	c := compress(data)
	if c == nil || !readsBack(encZstd, c, data, nil) || !readsBack(encRaw, data, data, nil) {
		t.Fatal("a good encoding does not read back")
	}
	bad := bytes.Clone(c)
	bad[len(bad)-1] ^= 0xff
	if readsBack(encZstd, bad, data, nil) || readsBack(encZstd, compress(mutated(data)), data, nil) || readsBack(encRaw, data[1:], data, nil) {
		t.Fatal("stored bytes that do not give the blob back pass the check")
	}
	// Deltas, compared part by part: the next request of a conversation
	// against the one before.
	next := append(bytes.Clone(data[:len(data)-2]), []byte(`,{"role":"user","content":"`+strings.Repeat("go on, ", 40)+`"}]}`)...)
	seen := map[uint8]bool{}
	for _, raw := range []bool{false, true} {
		enc, _, st := encodeBlob(next, data, fileHeaderSize, 0)
		if raw && enc == encDeltaZstd { // the middle as it is
			d, _ := parseDelta(st, 1<<62)
			mid, _ := decompress(d.middle, len(next)-int(d.prefix+d.suffix), 0)
			enc, st = encDelta, append(st[:len(st)-len(d.middle):len(st)-len(d.middle)], mid...)
		}
		if enc != encDelta && enc != encDeltaZstd || !readsBack(enc, st, next, data) {
			t.Fatalf("a good delta (encoding %d) does not read back", enc)
		}
		if readsBack(enc, st, mutated(next), data) || readsBack(enc, st, next[:len(next)-1], data) ||
			readsBack(enc, st, append(bytes.Clone(next), 'x'), data) || readsBack(enc, st, next, mutated(data)) ||
			readsBack(enc, st, next, data[:len(data)/2]) {
			t.Fatalf("a delta (encoding %d) that does not give the blob back passes the check", enc)
		}
		seen[enc] = true
	}
	if !seen[encDelta] || !seen[encDeltaZstd] {
		t.Fatalf("encodings checked %v, want both deltas", seen)
	}
}

// TestCommonAffixes holds commonAffixes, which compares blocks at a time,
// to the byte-at-a-time definition: a shared run of every length around
// the block sizes, a difference at every place near it, bodies of
// different lengths, and affixes that would overlap in the shorter one.
func TestCommonAffixes(t *testing.T) {
	t.Parallel()
	naive := bytewiseAffixes
	r := rand.New(rand.NewPCG(1, 2))
	check := func(a, b []byte) {
		t.Helper()
		p, s := commonAffixes(a, b)
		wp, ws := naive(a, b)
		if p != wp || s != ws {
			t.Fatalf("commonAffixes of %d and %d bytes = %d, %d; want %d, %d", len(a), len(b), p, s, wp, ws)
		}
	}
	base := make([]byte, 3*affixBlock+37)
	for i := range base {
		base[i] = byte('a' + r.IntN(3)) // few letters: runs that match by chance
	}
	for cut := 0; cut <= len(base); cut++ {
		// b differs from base at cut alone, and is also longer or shorter.
		b := bytes.Clone(base)
		if cut < len(b) {
			b[cut] ^= 0x80
		}
		check(base, b)
		check(b, base)
		check(base, append(bytes.Clone(b), "tail"...))
		check(base[:cut], base)
		check(base[cut:], base)
		// Inserted in the middle, as a resent conversation grows.
		grown := slices.Concat(base[:cut], []byte(`,{"role":"user"}`), base[cut:])
		check(base, grown)
		check(grown, base)
	}
	check(nil, nil)
	check(nil, base)
	check(base, base)
	for range 2000 {
		a := make([]byte, r.IntN(3*affixBlock))
		for i := range a {
			a[i] = byte(r.IntN(2))
		}
		b := bytes.Clone(a)
		for range r.IntN(3) {
			if len(b) > 0 {
				b[r.IntN(len(b))] ^= 1
			}
		}
		check(a, b[:r.IntN(len(b)+1)])
		check(a, b)
	}
}

// bytewiseAffixes is commonAffixes's definition, a byte at a time.
func bytewiseAffixes(a, b []byte) (prefix, suffix int) {
	n := min(len(a), len(b))
	for prefix < n && a[prefix] == b[prefix] {
		prefix++
	}
	for suffix < n-prefix && a[len(a)-1-suffix] == b[len(b)-1-suffix] {
		suffix++
	}
	return prefix, suffix
}

// BenchmarkCommonAffixes: a 40 KB conversation against the one it grew
// from (two messages more in the middle), as the recorder finds them for
// every call of a resent conversation, block-wise and a byte at a time.
func BenchmarkCommonAffixes(b *testing.B) {
	var conv []byte
	for i := 0; len(conv) < 40<<10; i++ {
		conv = fmt.Appendf(conv, `{"role":"user","content":"step %d: read src/main.go and fix the parser"},`, i)
	}
	grown := slices.Concat(conv[:len(conv)-200], []byte(`{"role":"assistant","content":"done"},`), conv[len(conv)-200:])
	for _, f := range []struct {
		name string
		fn   func(a, b []byte) (int, int)
	}{{"blocks", commonAffixes}, {"bytewise", bytewiseAffixes}} {
		b.Run(f.name, func(b *testing.B) {
			b.SetBytes(int64(len(grown)))
			for b.Loop() {
				f.fn(conv, grown)
			}
		})
	}
}
