package llmsim

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// Alphabets of the ids the real APIs hand out.
const (
	alnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	base58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
	hexdig = "0123456789abcdef"
)

// epoch is 2025-01-01T00:00:00Z; created timestamps fall in the year after.
const (
	epoch      = 1735689600
	epochRange = 365 * 24 * 3600
)

// ids derives every id and timestamp of one response from a seed, the hash
// of (script, endpoint, request body), so the same request to the same script
// always gets the same bytes back.
type ids struct{ seed [32]byte }

func newIDs(script *Script, endpoint string, body []byte) ids {
	h := sha256.New()
	h.Write(script.hash[:])
	h.Write([]byte(endpoint))
	h.Write([]byte{0})
	h.Write(body)
	var g ids
	h.Sum(g.seed[:0])
	return g
}

// make returns prefix followed by n characters of alphabet, derived from the
// seed and label (different labels give unrelated ids).
func (g ids) make(prefix, label string, n int, alphabet string) string {
	out := make([]byte, 0, len(prefix)+n)
	out = append(out, prefix...)
	var block [32]byte
	for counter := uint32(0); len(out) < len(prefix)+n; counter++ {
		h := sha256.New()
		h.Write(g.seed[:])
		h.Write([]byte(label))
		binary.Write(h, binary.BigEndian, counter)
		h.Sum(block[:0])
		for _, b := range block {
			if len(out) == len(prefix)+n {
				break
			}
			out = append(out, alphabet[int(b)%len(alphabet)])
		}
	}
	return string(out)
}

// created is a plausible Unix time for the response.
func (g ids) created() int64 {
	return epoch + int64(binary.BigEndian.Uint32(g.seed[:4])%epochRange)
}

// requestID is the value of x-request-id (OpenAI) and request-id (Anthropic).
func (g ids) requestID() string { return "req_" + hex.EncodeToString(g.seed[4:20]) }

// processingMS is a plausible openai-processing-ms header value.
func (g ids) processingMS() int { return 120 + int(binary.BigEndian.Uint16(g.seed[20:22]))%900 }

// fingerprint is the system_fingerprint of a model: stable per model name.
func fingerprint(model string) string {
	h := sha256.Sum256([]byte("llmsim-fp\x00" + model))
	return "fp_" + hex.EncodeToString(h[:5])
}

// arrival returns g for the first arrival of its request and, for each
// later one, ids derived from g and the arrival's number.
func (s *Server) arrival(g ids) ids {
	s.mu.Lock()
	if s.arrivals == nil {
		s.arrivals = map[[32]byte]int{}
	}
	n := s.arrivals[g.seed]
	s.arrivals[g.seed] = n + 1
	s.mu.Unlock()
	if n == 0 {
		return g
	}
	var buf [40]byte
	copy(buf[:], g.seed[:])
	binary.BigEndian.PutUint64(buf[32:], uint64(n))
	return ids{seed: sha256.Sum256(buf[:])}
}
