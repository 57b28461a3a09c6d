package tapefmt

import "github.com/zeebo/blake3"

// chain is the BLAKE3 hash chain over the frame records. The chain value
// starts as 32 zero bytes; at every step frame it becomes
//
//	C_k = BLAKE3(C_{k-1} || every frame record since the previous step frame)
//
// and that value is written in the step frame, which itself opens the next
// link. The head at any point, stored in the footer, is BLAKE3 of the last
// value and the frames since. Any change to any earlier frame changes every
// later value, and each byte is hashed once. Blob records are not hashed
// here: frames name blobs by their BLAKE3 hashes, which covers them.
type chain struct{ h *blake3.Hasher }

var zeroLink [32]byte

func newChain() chain {
	c := chain{h: blake3.New()}
	c.h.Write(zeroLink[:])
	return c
}

// Write adds one frame record, header and payload.
func (c chain) Write(b []byte) { c.h.Write(b) }

// head is the chain value over everything written so far.
func (c chain) head() Hash {
	var h Hash
	c.h.Digest().Read(h[:])
	return h
}

// link closes the current link at a step frame and returns its value.
func (c chain) link() Hash {
	h := c.head()
	c.h.Reset()
	c.h.Write(h[:])
	return h
}
