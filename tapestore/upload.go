package tapestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/jukebox-os/jukebox/sidecar"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// partSize is the size of each part of a multipart upload (S3's minimum is
// 5 MiB); a tape smaller than it goes in one request. A variable for the
// tests, which cut uploads short with tapes of a few parts.
var partSize int64 = 16 << 20

// partsInFlight is how many parts of a multipart upload go at once (the
// S3 driver's default concurrency).
const partsInFlight = 5

// Record is what the store keeps beside each tape (its summary object):
// who the tape is, whether it verified before upload, and what ls shows.
type Record struct {
	ID     string `json:"id"`   // the tape id, hex
	Head   string `json:"head"` // the chain head, hex
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"` // of the tape's bytes, which the store is proven to hold
	// Proof is how: "SHA-256 read back" (the object read whole), or
	// "CRC32 checked by the store" (S3's additional checksums, checked by
	// the store at upload, equal to the local tape's).
	Proof       string `json:"proof,omitempty"`
	Verified    bool   `json:"verified"` // the full check (jukebox verify) passed before upload
	VerifyError string `json:"verify_error,omitempty"`
	// Damaged: the tape did not verify and was sent all the same
	// (push --allow-damaged).
	Damaged  bool      `json:"damaged,omitempty"`
	Host     string    `json:"host,omitempty"` // the machine that uploaded it
	Uploaded time.Time `json:"uploaded"`
	Summary  *Summary  `json:"summary,omitempty"`
}

// Uploaded says how an upload went.
type Uploaded struct {
	Path    string `json:"path"` // the local tape
	Key     string `json:"key"`
	URL     string `json:"url"`
	Already bool   `json:"already"` // the store held this tape's bytes before: nothing was sent
	// NoteError says why the upload could not be noted beside the tape (a
	// read-only folder): push then asks the store about it next time.
	NoteError string `json:"note_error,omitempty"`
	// IndexError says why the store's index did not take the upload (ls
	// lists the store's index): jukebox reindex writes it again.
	IndexError string `json:"index_error,omitempty"`
	// TablesError says why the upload's rows (jukebox export parquet's
	// files, under the store's calls/ and runs/) were not written; the
	// caller that writes them sets it.
	TablesError string `json:"tables_error,omitempty"`
	// Aborted is how many interrupted multipart uploads of the key an
	// earlier run left, aborted before this one.
	Aborted int `json:"aborted_uploads,omitempty"`
	Record
}

// ErrTaken: the key a tape would be uploaded under holds other bytes,
// which are never overwritten.
var ErrTaken = errors.New("the store holds other bytes under that key (never overwritten)")

// ErrDamaged: the tape does not verify, and is not uploaded (unless
// UploadOptions.AllowDamaged).
var ErrDamaged = errors.New("the tape does not verify: not uploaded (jukebox verify says where; push --allow-damaged sends it marked as damaged)")

// UploadOptions are Upload's options.
type UploadOptions struct {
	// Progress is called as the tape's bytes go (done of total), and then
	// as they are read back.
	Progress func(done, total int64)
	// AllowDamaged sends a tape that does not verify, marked as such in
	// its summary object (and the object's metadata).
	AllowDamaged bool
}

// Upload uploads the tape at path with the default options (Progress
// only); see UploadWith.
func (s *Store) Upload(ctx context.Context, path string, progress func(done, total int64)) (*Uploaded, error) {
	return s.UploadWith(ctx, path, UploadOptions{Progress: progress})
}

// UploadWith uploads the tape at path, its summary and its sidecar
// folder. A tape that does not verify is ErrDamaged, and nothing of it is
// left in the store. An upload is done only when the object under the key
// reads back as this tape's bytes (their SHA-256): one the store held
// before with the same bytes is Already, one with other bytes ErrTaken,
// never overwritten. A send that stalls is given up and tried again
// (deadline.go) while ctx lasts; an interrupted multipart upload is
// aborted where the store allows.
func (s *Store) UploadWith(ctx context.Context, path string, opts UploadOptions) (*Uploaded, error) {
	t, err := tapefmt.Open(path)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	if t.Recovered() != nil {
		return nil, fmt.Errorf("%s: %w: jukebox recover writes a whole tape from it, which can be uploaded", path, tapefmt.ErrNoFooter)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	id := t.ID()
	up := &Uploaded{Path: path, Key: KeyFor(filepath.Base(path), id),
		Record: Record{ID: hex.EncodeToString(id[:]), Head: t.Head().String(), Size: st.Size(), Uploaded: time.Now().UTC()}}
	up.URL = s.Loc.TapeURL(up.Key)
	up.Host, _ = os.Hostname()
	// The full check and the summary read the tape while it goes up: the
	// upload then takes about as long as the bytes do. The object is
	// completed only once the check has passed.
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		if _, err := t.Verify(tapefmt.VerifyOptions{Blobs: true}); err != nil {
			up.VerifyError = err.Error()
		} else {
			up.Verified = true
		}
		if sum, err := timeline.Summarize(path, t); err == nil {
			up.Summary = storeSummary(sum)
		}
	}()
	gate := func() error {
		<-checked
		if !up.Verified && !opts.AllowDamaged {
			return fmt.Errorf("%s: %w: %s", path, ErrDamaged, up.VerifyError)
		}
		up.Damaged = !up.Verified
		return nil
	}
	// Multipart uploads of this key that an earlier upload left (older
	// than a stall: one in progress elsewhere, a push of the same tape
	// at the same time, is left alone), and those of this one cut short.
	multipart := up.Size > partSize
	began := time.Now()
	var left func(initiated time.Time) bool
	if multipart {
		stale := began.Add(-readTimeout(partSize * partsInFlight))
		var cut time.Time // the last upload of this tape cut short, from here
		for _, c := range readNotes(path).Cut {
			if c.Store == s.Loc.String() && c.Key == up.Key && c.At.After(cut) {
				cut = c.At
			}
		}
		left = func(t time.Time) bool { return t.Before(stale) || !t.After(cut.Add(time.Minute)) }
		if n, err := s.abortUploads(ctx, up.Key, left); err == nil {
			up.Aborted = n
		}
	}
	ours := func(t time.Time) bool { return !t.Before(began.Add(-time.Minute)) } // clocks differ a little
	pause := backoff
	for i := 1; ; i++ {
		err = s.send(ctx, path, up, gate, opts.Progress)
		again := errors.Is(err, errStalled) || cutConnection(err) // a connection cut under it was not tried again (GCS)
		if err == nil || errors.Is(err, ErrTaken) || errors.Is(err, ErrDamaged) || !again || i >= attempts || ctx.Err() != nil {
			break
		}
		if multipart {
			s.abortUploads(context.WithoutCancel(ctx), up.Key, ours)
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
		pause *= 2
	}
	<-checked
	if err != nil {
		// A multipart upload cut short leaves parts the store bills for:
		// abort them now where the store answers (a later upload of the
		// key tries again; docs/store.md has the lifecycle rule for the rest).
		if multipart && !errors.Is(err, ErrTaken) { // a key taken has no upload of ours in flight
			if _, aerr := s.abortUploads(context.WithoutCancel(ctx), up.Key, ours); aerr != nil {
				noteCut(path, s.Loc.String(), up.Key, time.Now().UTC())
			} else if ctx.Err() != nil {
				// The SDK's own abort ran under the cancelled context and
				// said it failed; this one did not.
				err = fmt.Errorf("store %s: the upload of %s was interrupted (%v): its parts were removed from the store", s.Loc, up.Key, context.Cause(ctx))
			}
		}
		return nil, err
	}
	if multipart {
		// A store that stalled answers the requests queued in the stall
		// when it goes on: the CreateMultipartUpload an earlier attempt
		// gave up on begins an upload after the sweep above. Sweep again.
		if n, err := s.abortUploads(ctx, up.Key, left); err == nil {
			up.Aborted += n
		}
	}
	if err := s.putRecord(ctx, up); err != nil {
		return nil, err
	}
	if err := s.sendSidecar(ctx, path, up.Key); err != nil {
		return nil, err
	}
	if err := s.indexUpload(ctx, up); err != nil {
		up.IndexError = err.Error()
	}
	if err := noteUpload(path, s.Loc.String(), up); err != nil {
		// The tape is up; only push's shortcut is lost (it asks the store).
		up.NoteError = err.Error()
	}
	return up, nil
}

// send puts the tape under its key, never over an existing object (a
// conditional put, and a look first), and proves what the key holds:
// this tape's bytes, read back. gate is asked before the object is
// completed; an error from it abandons the upload.
func (s *Store) send(ctx context.Context, path string, up *Uploaded, gate func() error, progress func(done, total int64)) error {
	ok, err := try(ctx, "HEAD "+up.URL, requestTimeout, func(ctx context.Context) (bool, error) { return s.b.Exists(ctx, up.Key) })
	if err != nil {
		return s.wrap(up.Key, err)
	}
	if ok {
		if err := gate(); err != nil {
			return err
		}
		return s.same(ctx, up, "")
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil) // an upload cut short is aborted, never completed
	// The parts go several at once (the driver's concurrency, 5 for S3):
	// the tape's bytes are read on only when one of them is done.
	dog := watch(cancel, "upload of "+up.URL, readTimeout(partSize*partsInFlight))
	defer dog.stop()
	md := map[string]string{"jukebox-head": up.Head, "jukebox-id": up.ID}
	w, err := s.b.NewWriter(wctx, up.Key, writerOptions{
		IfNotExist:  true,
		PartSize:    partSize,
		ContentType: "application/octet-stream",
		Metadata:    md,
	})
	if err != nil {
		return s.wrap(up.Key, err)
	}
	h := sha256.New()
	crcs := newPartSums(partSize)
	r := &counting{r: io.TeeReader(f, io.MultiWriter(h, crcs)), total: up.Size, fn: func(done, total int64) {
		dog.tick()
		if progress != nil {
			progress(done, total)
		}
	}}
	if _, err := io.Copy(w, r); err != nil {
		cancel(err)
		w.Close()
		return s.wrap(up.Key, stalled(wctx, err))
	}
	if err := gate(); err != nil {
		cancel(err)
		w.Close()
		return err
	}
	dog.tick()
	if err := w.Close(); err != nil {
		if codeOf(err) == codeExists {
			return s.same(ctx, up, hex.EncodeToString(h.Sum(nil))) // another uploader got there first
		}
		return s.wrap(up.Key, stalled(wctx, err))
	}
	if dog.stop() {
		return s.wrap(up.Key, context.Cause(wctx))
	}
	sum := hex.EncodeToString(h.Sum(nil))
	up.SHA256 = sum
	if ok, _ := s.checkedByStore(ctx, up.Key, crcs); ok {
		up.Proof = "CRC32 checked by the store"
		return nil
	}
	up.Proof = "SHA-256 read back"
	got, n, err := s.hashObject(ctx, up.Key, up.Size, nil)
	if err != nil {
		return fmt.Errorf("after upload, %s did not read back: %w", up.URL, err)
	}
	if got != sum || n != up.Size {
		return fmt.Errorf("after upload, %s reads back as %d bytes with SHA-256 %s; the local tape is %d bytes with %s", up.URL, n, got, up.Size, sum)
	}
	return nil
}

// stalled is err, or the stall that caused it when ctx was ended by one.
func stalled(ctx context.Context, err error) error {
	var se *StallError
	if cause := context.Cause(ctx); errors.As(cause, &se) {
		return se
	}
	return err
}

// same checks that the object under up's key holds this tape's bytes
// (their SHA-256 read back; sum is the local one, "" to work it out):
// the tape is then there already. Other bytes are ErrTaken, whatever
// their size or chain head.
func (s *Store) same(ctx context.Context, up *Uploaded, sum string) error {
	if sum == "" {
		f, err := os.Open(up.Path)
		if err != nil {
			return err
		}
		h, crcs := sha256.New(), newPartSums(partSize)
		_, err = io.Copy(io.MultiWriter(h, crcs), f)
		f.Close()
		if err != nil {
			return err
		}
		sum = hex.EncodeToString(h.Sum(nil))
		if ok, _ := s.checkedByStore(ctx, up.Key, crcs); ok {
			up.SHA256, up.Proof, up.Already = sum, "CRC32 checked by the store", true
			return nil
		}
	}
	got, n, err := s.hashObject(ctx, up.Key, up.Size, nil)
	if err != nil {
		return fmt.Errorf("%s: the key is taken, and it did not read back: %w", up.URL, err)
	}
	if got != sum || n != up.Size {
		what := "other bytes"
		if t, _, err := s.openRemote(ctx, up.Key); err == nil {
			if t.Head().String() == up.Head {
				what = "a copy of this tape that differs from it (damaged, or tampered with)"
			} else {
				what = "another tape (chain head " + t.Head().String() + ")"
			}
			t.Close()
		}
		return fmt.Errorf("%s: %w: it holds %s: %d bytes with SHA-256 %s; the local tape is %d bytes with %s",
			up.URL, ErrTaken, what, n, got, up.Size, sum)
	}
	up.SHA256, up.Proof = sum, "SHA-256 read back"
	up.Already = true
	return nil
}

// hashObject reads the object under key whole (at most size bytes and
// one: a longer one is refused) and returns its SHA-256 and size; a read
// that stalls is given up (and tried again).
func (s *Store) hashObject(ctx context.Context, key string, size int64, progress func(done, total int64)) (string, int64, error) {
	type res struct {
		sum string
		n   int64
	}
	r, err := try(ctx, "GET "+s.Loc.TapeURL(key), 0, func(ctx context.Context) (res, error) { // copyObject watches for stalls
		h := sha256.New()
		n, err := s.copyObject(ctx, key, h, size, progress)
		return res{hex.EncodeToString(h.Sum(nil)), n}, err
	})
	return r.sum, r.n, err
}

// copyObject streams the object under key into w, given up when no byte
// has come for a request's deadline.
func (s *Store) copyObject(ctx context.Context, key string, w io.Writer, size int64, progress func(done, total int64)) (int64, error) {
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	dog := watch(cancel, "download of "+s.Loc.TapeURL(key), requestTimeout)
	defer dog.stop()
	rd, err := s.b.NewReader(rctx, key)
	if err != nil {
		return 0, stalled(rctx, err)
	}
	defer rd.Close()
	c := &counting{r: rd, total: rd.Size(), fn: func(done, total int64) {
		dog.tick()
		if progress != nil {
			progress(done, total)
		}
	}}
	var r io.Reader = c
	if size >= 0 {
		// A body longer than the size the store listed (a store that is
		// not what it says) stops there, not when the disk is full.
		r = io.LimitReader(c, size+1)
	}
	n, err := io.Copy(w, r)
	if err != nil {
		return n, stalled(rctx, err)
	}
	if size >= 0 && n > size {
		return n, coded(codeInvalid, fmt.Errorf("%s: more bytes arrived than the %d listed", s.Loc.TapeURL(key), size))
	}
	return n, nil
}

// putRecord writes the tape's summary object, unless one is there.
func (s *Store) putRecord(ctx context.Context, up *Uploaded) error {
	b, err := json.MarshalIndent(up.Record, "", "  ")
	if err != nil {
		return err
	}
	_, err = try(ctx, "PUT "+s.Loc.TapeURL(summaryKey(up.Key)), requestTimeout, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, s.b.WriteAll(ctx, summaryKey(up.Key), b, writerOptions{IfNotExist: true, ContentType: "application/json"})
	})
	if err != nil && codeOf(err) != codeExists {
		return s.wrap(summaryKey(up.Key), err)
	}
	return nil
}

// stateFile is the file of a tape's sidecar folder that notes its uploads;
// it is not uploaded.
const stateFile = "store.json"

// sendSidecar uploads the files of the tape's sidecar folder (markers,
// match rules), each over its earlier copy: they are notes that change,
// not the tape.
func (s *Store) sendSidecar(ctx context.Context, path, key string) error {
	dir := sidecar.Dir(path)
	if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
		// None, or what stands there is not the tape's (a link is not
		// followed: it would send another folder's files; noting the
		// upload there fails, and says so).
		return nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == stateFile || e.Name()[0] == '.' {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		k := sidecarPrefix(key) + e.Name()
		if _, err := try(ctx, "PUT "+s.Loc.TapeURL(k), readTimeout(int64(len(b))), func(ctx context.Context) (struct{}, error) {
			return struct{}{}, s.b.WriteAll(ctx, k, b, writerOptions{})
		}); err != nil {
			return s.wrap(k, err)
		}
	}
	return nil
}

// upload notes are kept in the tape's sidecar folder, by store.
type notes struct {
	Uploads []note `json:"uploads"`
	// Cut are the multipart uploads of this tape that were cut short and
	// perhaps not aborted (the store was down): the next upload to that
	// store aborts them.
	Cut []note `json:"cut,omitempty"`
}

type note struct {
	Store string    `json:"store"`
	Key   string    `json:"key"`
	Head  string    `json:"head"`
	At    time.Time `json:"at"`
	// Notes is the print of the sidecar files sent with it (notesPrint):
	// markers or rules changed since are sent again by the next push.
	Notes string `json:"notes,omitempty"`
}

func readNotes(path string) notes {
	var n notes
	if sidecar.Check(sidecar.Dir(path)) != nil {
		return n
	}
	b, err := os.ReadFile(filepath.Join(sidecar.Dir(path), stateFile))
	if err == nil {
		json.Unmarshal(b, &n)
	}
	return n
}

// noteUpload records beside the tape that the store holds it (and no
// upload of it to that store is left cut short).
func noteUpload(path, store string, up *Uploaded) error {
	n := readNotes(path)
	n.Uploads = slices.DeleteFunc(n.Uploads, func(u note) bool { return u.Store == store })
	n.Uploads = append(n.Uploads, note{Store: store, Key: up.Key, Head: up.Head, At: time.Now().UTC(), Notes: notesPrint(path)})
	n.Cut = slices.DeleteFunc(n.Cut, func(u note) bool { return u.Store == store })
	return writeNotes(path, n)
}

// noteCut records beside the tape that an upload of it to store was cut
// short at the time at, and its parts perhaps left there. A tape whose
// sidecar cannot be written leaves them to the lifecycle rule.
func noteCut(path, store, key string, at time.Time) {
	n := readNotes(path)
	n.Cut = append(n.Cut, note{Store: store, Key: key, At: at})
	writeNotes(path, n)
}

func writeNotes(path string, n notes) error {
	b, err := json.MarshalIndent(n, "", "  ")
	if err != nil {
		return err
	}
	return sidecar.WriteFile(filepath.Join(sidecar.Dir(path), stateFile), b)
}

// Noted reports whether the tape at path is noted as uploaded to store
// with its present chain head: push skips it without asking the store.
func Noted(path, store string) (key string, ok bool) {
	t, err := tapefmt.Open(path)
	if err != nil {
		return "", false
	}
	head := t.Head().String()
	t.Close()
	for _, u := range readNotes(path).Uploads {
		if u.Store == store && u.Head == head && u.Notes == notesPrint(path) {
			return u.Key, true
		}
	}
	return "", false
}

// notesPrint is a print (SHA-256) of the files of the tape's sidecar
// folder that go with it (sendSidecar's), "" when there are none: a
// marker added or a rule changed after an upload makes the tape no
// longer noted, so that push sends them (the tape's bytes, in the store
// already, are not sent again).
func notesPrint(path string) string {
	dir := sidecar.Dir(path)
	if sidecar.Check(dir) != nil {
		return ""
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	h := sha256.New()
	n := 0
	for _, e := range ents { // sorted by name
		if !e.Type().IsRegular() || e.Name() == stateFile || e.Name()[0] == '.' {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return "unreadable"
		}
		fmt.Fprintf(h, "%s\x00%d\x00", e.Name(), len(b))
		h.Write(b)
		n++
	}
	if n == 0 {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// counting reports the bytes read through it.
type counting struct {
	r     io.Reader
	done  int64
	total int64
	fn    func(done, total int64)
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.done += int64(n)
	c.fn(c.done, c.total)
	return n, err
}
