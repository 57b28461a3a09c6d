package tapefmt

import "github.com/zeebo/blake3"

// chain is the running BLAKE3 hash over every frame record, header and
// payload, in order. Its value after frame N is the chain head at N: any
// change to any earlier frame changes it. Blob records are not hashed here;
// frames name blobs by their BLAKE3 hashes, which covers them.
type chain struct{ h *blake3.Hasher }

func newChain() chain { return chain{h: blake3.New()} }

func (c chain) Write(b []byte) { c.h.Write(b) }

func (c chain) head() Hash {
	var h Hash
	c.h.Digest().Read(h[:])
	return h
}
