package tapefmt

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// SyncPolicy says when the writer asks the OS to put the tape on disk.
type SyncPolicy uint8

// Sync policies. Close always syncs.
const (
	// SyncStep hands every step boundary to the OS at once and fsyncs it in
	// the background, at most every 100 ms (the steps between go with the
	// next fsync), so that a step does not wait for the disk: a killed
	// process loses nothing, a power cut at most the last 100 ms of steps.
	// The default.
	SyncStep  SyncPolicy = iota
	SyncNever            // let the OS decide; fastest, a power cut may cost whole steps
	SyncFrame            // fsync after every frame; slowest, loses nothing written
)

// syncGap is the least time between two background fsyncs under
// SyncStep: an fsync costs the machine far more than a quick step does
// (on two cores it added a fifth to each call of a 50-step run), so one
// covers every step of its gap. The steps are with the OS at once.
const syncGap = 100 * time.Millisecond

// Options configure a Writer. The zero value is ready to use.
type Options struct {
	Sync SyncPolicy
	// Now returns the time offset of the next frame; the default is the
	// monotonic time since the writer was made.
	Now func() time.Duration
	// Created is the wall-clock start written in the header; default now.
	Created time.Time
	// ID is the tape id written in the header; default random. Set it only
	// to make a tape's bytes reproducible (test fixtures).
	ID [16]byte
	// Filter, when set, rewrites every payload before it is encoded and
	// every blob before it is hashed: jukebox's recorder passes package
	// redact's, so that secrets never reach the tape. Without one the
	// writer stores what it is given.
	Filter Filter
	// Observer, when set, sees the tape as it is written (a live export).
	Observer Observer

	// noBlobReadBack turns off the check of each encoded blob, for the
	// benchmark that measures what the check costs (export_test.go).
	noBlobReadBack bool
	// syncGap, when set, replaces the package's for a test.
	syncGap time.Duration
}

// A Filter rewrites what a Writer is given before it is stored. Payload
// sees each payload given to Append; Blob each blob given to PutBlob;
// Stream a streamed body with its chunk table (PutStream), which it may
// shorten or lengthen as long as the table it returns fits the bytes.
// Frames and blobs copied from another tape (AppendFrame, CopyFrame) are
// not filtered again.
type Filter interface {
	Payload(p Payload) Payload
	Blob(data []byte) []byte
	Stream(data []byte, chunks Chunks) ([]byte, Chunks)
}

// A StreamScanner is a Filter's Stream done as the body arrives: Write
// is given the body's bytes in order, Finish the whole body, and returns
// what Stream would (reading data anew when it is not what was written).
type StreamScanner interface {
	Write(p []byte)
	Finish(data []byte, chunks Chunks) ([]byte, Chunks)
}

// streamFilter is a Filter that can scan a streamed body as it arrives.
type streamFilter interface {
	NewStream() StreamScanner
}

// StreamScan is the scan of a streamed body for one Writer's Filter
// (NewStreamScan), which PutStreamScanned finishes: the work of masking a
// body, done while it arrives, off the time the agent waits for the body's
// frame. Write is called from one goroutine at a time, and not after the
// body is given to PutStreamScanned.
type StreamScan struct {
	w    *Writer
	scan StreamScanner
}

// Write adds the body's next bytes to the scan.
func (s *StreamScan) Write(p []byte) { s.scan.Write(p) }

// NewStreamScan starts the scan of a streamed body for PutStreamScanned;
// nil when the Writer's Filter has none (or there is no Filter: nothing to
// do ahead).
func (w *Writer) NewStreamScan() *StreamScan {
	if f, ok := w.opts.Filter.(streamFilter); ok {
		return &StreamScan{w: w, scan: f.NewStream()}
	}
	return nil
}

// Observer sees what a Writer writes, as it is written: for a live
// consumer of a tape (the OpenTelemetry export) that must never slow the
// writer. ObserveStart is called once, by Create or NewWriter; ObserveBlob
// after each PutBlob that succeeds (also for a blob the tape holds already),
// before the frame that names it is appended; ObserveFrame after each
// frame is written, in sequence order, with the writer's lock held. No
// method may block or call the Writer. The bytes given belong to the
// writer and its caller: an observer copies what it keeps.
type Observer interface {
	ObserveStart(id [16]byte, created time.Time)
	ObserveBlob(lane string, h Hash, data []byte)
	ObserveFrame(f Frame)
}

// Writer appends frames and blobs to a tape. It is safe for concurrent use.
// Close writes the index and footer; a tape whose writer never closed is
// still readable up to its last whole step.
type Writer struct {
	mu     sync.Mutex
	bw     *bufio.Writer
	dst    io.Writer
	opts   Options
	off    int64 // bytes written so far, header included
	seq    uint64
	steps  uint64
	chain  chain
	frames []byte // the frame index, frameEntrySize bytes per frame
	blobs  map[Hash]blobLoc
	lanes  map[string]lane
	id     [16]byte
	err    error // sticky: the first failure ends the writer
	closed bool
	head   [frameHeaderSize]byte
	// rawFallbacks counts blobs stored raw because their encoded form did
	// not decode back to them (a codec fault); tests expect none.
	rawFallbacks int

	kick    chan struct{}         // asks the background syncer for an fsync
	synced  chan struct{}         // closed when the background syncer has stopped
	stop    chan struct{}         // closed when the writer closes: no more waiting
	syncErr atomic.Pointer[error] // the background syncer's failure
}

// blobLoc is where a blob record is and how deep its delta chain goes.
type blobLoc struct {
	off   int64
	raw   uint32
	depth uint16
}

// lane is the last blob put in a lane, kept to delta the next one against.
type lane struct {
	hash Hash
	data []byte
}

// maxLaneBlob is the largest blob kept in memory as a delta base.
const maxLaneBlob = 8 << 20

// Create makes a new tape at path; it refuses to overwrite an existing file.
func Create(path string, opts Options) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create tape: %w", err)
	}
	lockWriting(f)
	w, err := NewWriter(f, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Recording reports whether a writer made by Create, in this process or
// another, still holds the tape at path open: a torn tape (no footer yet)
// then is one still being recorded, that grows, rather than one whose
// writer died. It knows by the writer's lock (FORMAT.md, section 8.4),
// which the system drops when the writer's file is closed or its process
// ends (Close lets it go first, for a copy of the file a child process
// may hold a moment longer). Where there are no such locks (Windows) it
// reports false. A tape with its footer is finished, whoever holds it.
func Recording(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return recording(f) && !finished(f)
}

// finished reports whether the file f has open ends with a tape's footer.
func finished(f *os.File) bool {
	st, err := f.Stat()
	if err != nil || st.Size() < fileHeaderSize+footerSize {
		return false
	}
	b := make([]byte, footerSize)
	if _, err := f.ReadAt(b, st.Size()-footerSize); err != nil {
		return false
	}
	_, ok, err := parseFooter(b, st.Size())
	return ok && err == nil
}

// NewWriter starts a tape on dst, which should be empty. If dst has a
// Sync() error method it is used for the sync policy; if it is an io.Closer,
// Close closes it.
func NewWriter(dst io.Writer, opts Options) (*Writer, error) {
	if opts.Created.IsZero() {
		opts.Created = time.Now()
	}
	if opts.Now == nil {
		start := time.Now()
		opts.Now = func() time.Duration { return time.Since(start) }
	}
	w := &Writer{
		bw: bufio.NewWriterSize(dst, 64<<10), dst: dst, opts: opts,
		chain: newChain(), blobs: map[Hash]blobLoc{}, lanes: map[string]lane{},
		id: opts.ID,
	}
	if w.id == [16]byte{} {
		w.id = newTapeID()
	}
	h := fileHeader{Version: Version, Created: opts.Created, ID: w.id}
	if err := w.write(h.marshal()); err != nil {
		return nil, err
	}
	if opts.Observer != nil {
		opts.Observer.ObserveStart(w.id, opts.Created)
	}
	return w, nil
}

// ID returns the random id written in the tape header.
func (w *Writer) ID() [16]byte { return w.id }

// Now is the time offset a frame appended now is given.
func (w *Writer) Now() time.Duration { return w.opts.Now() }

// Append writes p as the next frame on stream, timed now.
func (w *Writer) Append(stream uint32, p Payload) (seq uint64, err error) {
	return w.AppendAt(-1, stream, p)
}

// AppendAt writes p as the next frame with time offset t; a negative t means now.
func (w *Writer) AppendAt(t time.Duration, stream uint32, p Payload) (uint64, error) {
	if p.Kind() == KindStep {
		return 0, errors.New("step frames are written by Commit, which links the hash chain")
	}
	if w.opts.Filter != nil {
		p = w.opts.Filter.Payload(p)
	}
	body, err := marshalPayload(p)
	if err != nil {
		return 0, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.appendLocked(Frame{Kind: p.Kind(), Schema: schemaVersion(p.Kind()), Stream: stream, Time: t, Payload: body})
}

// AppendFrame copies a frame read from another tape: kind, schema, stream,
// time and payload are kept, the sequence number is this tape's next. A step
// frame is written anew so that its chain head is this tape's. The payload is
// trusted to be redacted already (it came from a tape).
func (w *Writer) AppendFrame(f Frame) (uint64, error) {
	if f.Kind == KindStep {
		return w.commitAt(f.Time, f.Stream)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.appendLocked(Frame{Kind: f.Kind, Schema: f.Schema, Stream: f.Stream, Time: f.Time, Payload: f.Payload})
}

// Commit writes a step boundary: the frames since the last one form a whole
// agent step that survives a crash.
func (w *Writer) Commit() (uint64, error) { return w.commitAt(-1, 0) }

func (w *Writer) commitAt(t time.Duration, stream uint32) (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return 0, err
	}
	body, err := marshalPayload(Step{Step: w.steps, Chain: w.chain.link()})
	if err != nil {
		return 0, err
	}
	w.steps++
	return w.appendLocked(Frame{Kind: KindStep, Schema: schemaVersion(KindStep), Stream: stream, Time: t, Payload: body})
}

func (w *Writer) appendLocked(f Frame) (uint64, error) {
	if err := w.usable(); err != nil {
		return 0, err
	}
	if len(f.Payload) > MaxPayload {
		return 0, fmt.Errorf("%s payload of %d bytes exceeds %d: put large data in a blob", f.Kind, len(f.Payload), MaxPayload)
	}
	if f.Time < 0 {
		f.Time = w.opts.Now()
	}
	f.Seq, f.Offset = w.seq, w.off
	f.marshalHeader(w.head[:])
	w.chain.Write(w.head[:])
	w.chain.Write(f.Payload)
	if err := w.write(w.head[:], f.Payload); err != nil {
		return 0, err
	}
	w.frames = appendFrameEntry(w.frames, &f)
	w.seq++
	if w.opts.Observer != nil {
		w.opts.Observer.ObserveFrame(f)
	}
	return f.Seq, w.afterFrame(f.Kind.Boundary())
}

// afterFrame flushes and syncs as the policy asks.
func (w *Writer) afterFrame(boundary bool) error {
	if !boundary && w.opts.Sync != SyncFrame {
		return nil
	}
	if err := w.bw.Flush(); err != nil {
		return w.fail(err)
	}
	switch w.opts.Sync {
	case SyncFrame:
		return w.sync()
	case SyncStep:
		w.syncLater()
	}
	return nil
}

// syncLater asks the background syncer for an fsync; requests made while
// one runs, or within syncGap of the last one, are folded into the next.
func (w *Writer) syncLater() {
	s, ok := w.dst.(interface{ Sync() error })
	if !ok {
		return
	}
	if w.kick == nil {
		w.kick, w.synced, w.stop = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
		gap := cmp.Or(w.opts.syncGap, syncGap)
		go func() {
			defer close(w.synced)
			var last time.Time
			for range w.kick {
				// At most one fsync per gap: the steps handed to the OS
				// meanwhile are synced together by the next one.
				if wait := gap - time.Since(last); wait > 0 {
					t := time.NewTimer(wait)
					select {
					case <-t.C:
					case <-w.stop:
						t.Stop()
						return // Close syncs what is left
					}
				}
				last = time.Now()
				if err := s.Sync(); err != nil {
					w.syncErr.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// stopSyncer waits for the background syncer to finish.
func (w *Writer) stopSyncer() {
	if w.kick != nil {
		close(w.stop)
		close(w.kick)
		<-w.synced
		w.kick = nil
	}
}

func (w *Writer) sync() error {
	if s, ok := w.dst.(interface{ Sync() error }); ok {
		if err := s.Sync(); err != nil {
			return w.fail(err)
		}
	}
	return nil
}

// PutBlob stores data once under its BLAKE3 hash and returns the hash (of
// the data as stored: filtered, when Options.Filter says so). Blobs
// in the same lane (for example every request body sent to one endpoint) are
// stored as deltas of one another, so resent history costs little.
func (w *Writer) PutBlob(laneName string, data []byte) (Hash, error) {
	if w.opts.Filter != nil {
		data = w.opts.Filter.Blob(data)
	}
	return w.storeBlob(laneName, data)
}

// PutStream is PutBlob for a body that arrived in chunks (a streamed
// answer): the filter sees the whole body with its chunk table, and the
// table returned fits the bytes stored.
func (w *Writer) PutStream(laneName string, data []byte, chunks Chunks) (Hash, Chunks, error) {
	if w.opts.Filter != nil {
		data, chunks = w.opts.Filter.Stream(data, chunks)
	}
	h, err := w.storeBlob(laneName, data)
	return h, chunks, err
}

// PutStreamScanned is PutStream of data, the whole body whose bytes
// were written to scan, a scan of this Writer (NewStreamScan): its Filter
// finishes the scan's work instead of starting over. A nil scan, or one of
// another Writer, is PutStream.
func (w *Writer) PutStreamScanned(laneName string, data []byte, chunks Chunks, scan *StreamScan) (Hash, Chunks, error) {
	if scan == nil || scan.w != w {
		return w.PutStream(laneName, data, chunks)
	}
	data, chunks = scan.scan.Finish(data, chunks)
	h, err := w.storeBlob(laneName, data)
	return h, chunks, err
}

// storeBlob stores data and tells the observer.
func (w *Writer) storeBlob(laneName string, data []byte) (Hash, error) {
	h, err := w.putBlob(laneName, data)
	if err == nil && w.opts.Observer != nil {
		w.opts.Observer.ObserveBlob(laneName, h, data)
	}
	return h, err
}

// putBlob stores data as it is: CopyFrame's blobs come from a tape, where
// frames name them by their hash.
func (w *Writer) putBlob(laneName string, data []byte) (Hash, error) {
	if len(data) > MaxBlobSize {
		return Hash{}, fmt.Errorf("blob of %d bytes exceeds %d", len(data), MaxBlobSize)
	}
	h := HashOf(data)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return h, err
	}
	if _, ok := w.blobs[h]; ok {
		return h, nil
	}
	var base []byte
	var bl blobLoc
	if ln, ok := w.lanes[laneName]; ok {
		base, bl = ln.data, w.blobs[ln.hash]
	}
	enc, depth, stored := encodeBlob(data, base, bl.off, bl.depth)
	if !w.opts.noBlobReadBack && !readsBack(enc, stored, data, base) {
		// Never write what the reader would refuse: the blob goes raw.
		enc, depth, stored = encRaw, 0, data
		w.rawFallbacks++
	}
	bh := blobHeader{Encoding: enc, Depth: depth, Stored: uint32(len(stored)), Hash: h, RawLen: uint32(len(data))}
	loc := blobLoc{off: w.off, raw: bh.RawLen, depth: depth}
	if err := w.write(bh.marshal(stored)); err != nil {
		return h, err
	}
	w.blobs[h] = loc
	if len(data) <= maxLaneBlob {
		// A copy: the caller may reuse its buffer, and the next delta is
		// built on these bytes.
		w.lanes[laneName] = lane{hash: h, data: bytes.Clone(data)}
	}
	return h, nil
}

// SetSync changes the sync policy from the next frame on: a fork writes
// the prefix it replays without syncing, and syncs from its fork call on.
func (w *Writer) SetSync(p SyncPolicy) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.opts.Sync = p
}

// Head returns the chain head: the BLAKE3 hash of every frame record so far.
func (w *Writer) Head() Hash {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.headLocked()
}

func (w *Writer) headLocked() Hash { return w.chain.head() }

// Len returns the number of frames written.
func (w *Writer) Len() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq
}

// Flush hands buffered records to the OS without syncing.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.bw.Flush(); err != nil {
		return w.fail(err)
	}
	return nil
}

// Close writes the index and footer, syncs, and closes the destination if it
// is an io.Closer. Frames after the last step boundary are kept: a closed
// tape is whole by definition.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.stopSyncer()
	err := w.usable()
	if err == nil {
		err = w.writeIndex()
	}
	if err == nil {
		err = w.bw.Flush()
	}
	if err == nil {
		err = w.sync()
	}
	w.closed = true
	if f, ok := w.dst.(*os.File); ok {
		unlockWriting(f)
	}
	if c, ok := w.dst.(io.Closer); ok {
		err = errors.Join(err, c.Close())
	}
	if err != nil {
		return fmt.Errorf("close tape: %w", err)
	}
	return nil
}

// Err is the error that made the Writer unusable (a write that failed,
// a failed fsync), ErrClosed once closed, nil while it takes frames.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.usable()
}

func (w *Writer) usable() error {
	switch {
	case w.closed:
		return ErrClosed
	case w.err != nil:
		return w.err
	case w.syncErr.Load() != nil:
		return w.fail(*w.syncErr.Load())
	}
	return nil
}

func (w *Writer) write(parts ...[]byte) error {
	for _, p := range parts {
		n, err := w.bw.Write(p)
		w.off += int64(n)
		if err != nil {
			return w.fail(err)
		}
	}
	return nil
}

func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = fmt.Errorf("write tape: %w", err)
	}
	return w.err
}
