// Package tapefmt reads and writes jukebox tapes (.jbx files).
//
// A tape is the flight recording of one agent run, in one portable file:
// an append-only sequence of frames (what happened: the run's start and end,
// each model request and response, tool calls, MCP messages, file changes,
// output, booth transactions), each with a kind, a time offset and a JSON
// payload, interleaved with blobs (large bytes such as request and response
// bodies, stored once under their BLAKE3 hash and delta-compressed against
// earlier blobs). A BLAKE3 hash chain over the frames makes any later edit
// visible; step frames mark whole agent steps and carry the chain so far. A
// closed tape ends with an index, so it opens in O(1) and any frame is one
// seek away; a tape whose writer crashed is recovered by scanning and cut
// back to its last whole step. A keyed BLAKE2b seal over the chain head
// proves a tape untouched to whoever holds the key.
//
// Every byte of the format is specified in FORMAT.md, in this package's
// folder: the header, frame and blob records, the hash chain, the index,
// the seal, recovery, the limits a reader enforces, every kind's payload
// schema and the rules for changing any of it. Tests check FORMAT.md's
// tables against the constants here (formatdoc_test.go).
//
// # Writing
//
// Create (or NewWriter) starts a tape; Writer.PutBlob stores bytes and
// returns the Hash a payload names them by; Writer.Append writes a frame
// from a typed payload (RunStart, LLMRequest, FileChange, ...); Writer.Commit
// closes a whole step; Writer.Close writes the index. The writer stores what
// it is given, after its Options.Filter: jukebox's recorder passes package
// redact's, which drops and masks secrets at this one place.
// CreateWith and Rewrite leave a file only when the whole tape was written
// and reads back.
//
// # Reading
//
// Open (or NewReader) opens a tape; Tape.Frames and Tape.All walk its frames,
// Tape.Frame reaches one by number, Frame.Decode gives its typed payload and
// Tape.Blob the bytes a payload names. Tape.Verify checks CRCs, the chain,
// the index, blob hashes and the seal; Seal seals a closed tape.
//
// # Enumerations
//
// The values a tape stores are typed here and nowhere else: frame kinds
// (Kind, with dotted names such as "llm.request"), file-change operations
// (FileOp), run modes (RunMode), MCP directions (MCPDirection), tool-call
// sources (ToolSource) and run-end reasons (EndReason). Other packages use
// these constants rather than the strings.
//
// tapefmt is a leaf: it imports nothing else from jukebox.
package tapefmt
