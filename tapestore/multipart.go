package tapestore

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"hash/crc32"
	"slices"
	"strconv"
	"time"
)

// abortUploads aborts the unfinished multipart uploads of key begun at
// a time which accepts, each
// request with its deadline: those an upload cut short left (a stall, a
// crash of jukebox or of the store). A store that has no such thing, or
// does not answer, aborts none (docs/store.md gives the lifecycle rule
// that removes what is left).
func (s *Store) abortUploads(ctx context.Context, key string, which func(initiated time.Time) bool) (int, error) {
	m := s.b.multipart()
	if m == nil {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return m.abortUploads(ctx, s.Loc.Prefix+key, which)
}

// checkedByStore reports whether the store holds, under key, the CRC32
// checksums it checked of the bytes it received, and they are sums's
// (of the whole object, or of each part): then the object is the bytes
// sums was fed, and need not be read back. false says nothing of the
// object: read it back.
func (s *Store) checkedByStore(ctx context.Context, key string, sums *partSums) (bool, error) {
	m := s.b.multipart()
	if m == nil {
		return false, nil
	}
	got, err := try(ctx, "HEAD "+s.Loc.TapeURL(key), requestTimeout, func(ctx context.Context) (checksum, error) {
		sum, ok, err := m.storedCRC32(ctx, s.Loc.Prefix+key)
		return checksum{sum, ok}, err
	})
	if err != nil || !got.ok {
		return false, err
	}
	// Another sum proves nothing either way (parts of another size, sent
	// by another tool): the object is then read back.
	return got.sum == sums.whole() || got.sum == sums.composite(), nil
}

type checksum struct {
	sum string
	ok  bool
}

// partSums is the CRC32 of bytes written to it, whole and by part.
type partSums struct {
	size  int64
	all   hash.Hash32
	part  hash.Hash32
	in    int64 // bytes of the part so far
	parts []byte
	n     int
}

func newPartSums(size int64) *partSums {
	return &partSums{size: size, all: crc32.NewIEEE(), part: crc32.NewIEEE()}
}

func (p *partSums) Write(b []byte) (int, error) {
	p.all.Write(b)
	n := len(b)
	for len(b) > 0 {
		k := min(int64(len(b)), p.size-p.in)
		p.part.Write(b[:k])
		p.in += k
		b = b[k:]
		if p.in == p.size {
			p.endPart()
		}
	}
	return n, nil
}

func (p *partSums) endPart() {
	p.parts = p.part.Sum(p.parts)
	p.part.Reset()
	p.in = 0
	p.n++
}

func (p *partSums) whole() string {
	return base64.StdEncoding.EncodeToString(p.all.Sum(nil))
}

func (p *partSums) composite() string {
	parts, n := p.parts, p.n
	if p.in > 0 {
		parts, n = p.part.Sum(slices.Clip(parts)), n+1
	}
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(parts))) + "-" + strconv.Itoa(n)
}
