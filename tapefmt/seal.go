package tapefmt

import (
	"crypto/subtle"
	"fmt"
	"os"

	"golang.org/x/crypto/blake2b"
)

// sealContext separates seal MACs from any other use of the same key.
const sealContext = "jukebox tape seal v1"

// Key sizes accepted for sealing.
const (
	MinKeySize = 16
	MaxKeySize = blake2b.Size // 64, the BLAKE2b key limit
)

// sealMAC is BLAKE2b-256 keyed with key over the context, the file header
// (bytes 0..59: every field but the header's own CRC), the frame count and
// the chain head.
func sealMAC(key []byte, header []byte, frames uint64, head Hash) (Hash, error) {
	if len(key) < MinKeySize || len(key) > MaxKeySize {
		return Hash{}, fmt.Errorf("seal key is %d bytes, want %d to %d", len(key), MinKeySize, MaxKeySize)
	}
	m, err := blake2b.New256(key)
	if err != nil {
		return Hash{}, fmt.Errorf("seal: %w", err)
	}
	m.Write([]byte(sealContext))
	m.Write(header[:60])
	m.Write(le.AppendUint64(nil, frames))
	m.Write(head[:])
	var h Hash
	copy(h[:], m.Sum(nil))
	return h, nil
}

// CheckSeal reports whether the tape's seal was made with key over this
// tape's header, frame count and chain head. It does not re-hash the
// frames: run Verify for that.
func (t *Tape) CheckSeal(key []byte) error {
	if !t.Sealed() {
		return ErrNotSealed
	}
	mac, err := sealMAC(key, t.hdr.raw, t.ft.frames, t.ft.head)
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare(mac[:], t.ft.seal[:]) != 1 {
		return ErrSeal
	}
	return nil
}

// Seal verifies the tape at path (CRCs, chain, index, blobs) and writes a
// keyed BLAKE2b MAC over its header, frame count and chain head into the
// footer. Only the footer changes; it is written in place and synced, then
// read back with the key. Resealing replaces the seal.
func Seal(path string, key []byte) (Hash, error) {
	t, err := Open(path)
	if err != nil {
		return Hash{}, err
	}
	defer t.Close()
	if !t.closed {
		return Hash{}, fmt.Errorf("%s: %w: only a whole tape can be sealed (jukebox recover writes one)", path, ErrNoFooter)
	}
	if _, err := t.Verify(VerifyOptions{Blobs: true}); err != nil {
		return Hash{}, fmt.Errorf("%s: refusing to seal a damaged tape: %w", path, err)
	}
	mac, err := sealMAC(key, t.hdr.raw, t.ft.frames, t.ft.head)
	if err != nil {
		return Hash{}, err
	}
	ft := t.ft
	ft.seal, ft.flags = mac, ft.flags|footerSealed
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return Hash{}, fmt.Errorf("seal: %w", err)
	}
	if _, err := f.WriteAt(ft.marshal(), t.size-footerSize); err != nil {
		f.Close()
		return Hash{}, fmt.Errorf("seal: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return Hash{}, fmt.Errorf("seal: %w", err)
	}
	if err := f.Close(); err != nil {
		return Hash{}, fmt.Errorf("seal: %w", err)
	}
	return mac, ReadBack(path, key)
}
