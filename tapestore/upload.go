package tapestore

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// partSize is the size of each part of a multipart upload (S3's minimum is
// 5 MiB); a tape smaller than it goes in one request.
const partSize = 16 << 20

// Record is what the store keeps beside each tape (its summary object):
// who the tape is, whether it verified before upload, and what ls shows.
type Record struct {
	ID          string    `json:"id"`   // the tape id, hex
	Head        string    `json:"head"` // the chain head, hex
	Size        int64     `json:"size"`
	Verified    bool      `json:"verified"` // the full check (jukebox verify) passed before upload
	VerifyError string    `json:"verify_error,omitempty"`
	Host        string    `json:"host,omitempty"` // the machine that uploaded it
	Uploaded    time.Time `json:"uploaded"`
	Summary     *Summary  `json:"summary,omitempty"`
}

// Uploaded says how an upload went.
type Uploaded struct {
	Path    string `json:"path"` // the local tape
	Key     string `json:"key"`
	URL     string `json:"url"`
	Already bool   `json:"already"` // the store held this tape before: nothing was sent
	// NoteError says why the upload could not be noted beside the tape (a
	// read-only folder): push then asks the store about it next time.
	NoteError string `json:"note_error,omitempty"`
	Record
}

// ErrTaken: the key a tape would be uploaded under holds another object,
// which is never overwritten.
var ErrTaken = errors.New("the store holds another object under that key (never overwritten)")

// Upload uploads the tape at path, its summary and its sidecar folder. A
// tape the store already holds (same key, same chain head) is not sent
// again; an object of another content under its key is ErrTaken. The
// upload is verified by reading the uploaded footer back: size and chain
// head must match the local tape's.
func (s *Store) Upload(ctx context.Context, path string, progress func(done, total int64)) (*Uploaded, error) {
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
	// upload then takes about as long as the bytes do.
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
	err = s.send(ctx, path, up, progress)
	<-checked
	if err != nil {
		return nil, err
	}
	if err := s.check(ctx, up); err != nil {
		return nil, err
	}
	if err := s.putRecord(ctx, up); err != nil {
		return nil, err
	}
	if err := s.sendSidecar(ctx, path, up.Key); err != nil {
		return nil, err
	}
	if err := noteUpload(path, s.Loc.String(), up); err != nil {
		// The tape is up; only push's shortcut is lost (it asks the store).
		up.NoteError = err.Error()
	}
	return up, nil
}

// send puts the tape under its key, never over an existing object: a
// conditional put, and where the key is taken, a look at what holds it.
func (s *Store) send(ctx context.Context, path string, up *Uploaded, progress func(done, total int64)) error {
	if ok, err := s.b.Exists(ctx, up.Key); err != nil {
		return s.wrap(up.Key, err)
	} else if ok {
		return s.same(ctx, up)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel() // an upload cut short is aborted, never completed
	w, err := s.b.NewWriter(wctx, up.Key, &blob.WriterOptions{
		IfNotExist:  true,
		BufferSize:  partSize,
		ContentType: "application/octet-stream",
		Metadata:    map[string]string{"jukebox-head": up.Head, "jukebox-id": up.ID},
	})
	if err != nil {
		return s.wrap(up.Key, err)
	}
	var r io.Reader = f
	if progress != nil {
		r = &counting{r: f, total: up.Size, fn: progress}
	}
	if _, err := io.Copy(w, r); err != nil {
		cancel()
		w.Close()
		return s.wrap(up.Key, err)
	}
	if err := w.Close(); err != nil {
		if gcerrors.Code(err) == gcerrors.FailedPrecondition {
			return s.same(ctx, up) // another uploader got there first
		}
		return s.wrap(up.Key, err)
	}
	return nil
}

// same checks that the object under up's key is up's tape; it is then
// there already.
func (s *Store) same(ctx context.Context, up *Uploaded) error {
	t, size, err := s.openRemote(ctx, up.Key)
	if err != nil {
		return fmt.Errorf("%s: %w: %v", up.URL, ErrTaken, err)
	}
	defer t.Close()
	if size != up.Size || t.Head().String() != up.Head {
		return fmt.Errorf("%s: %w: it holds another tape (chain head %s, %d bytes)", up.URL, ErrTaken, t.Head(), size)
	}
	up.Already = true
	return nil
}

// check reads the uploaded tape's footer back: its size and chain head
// must be the local tape's.
func (s *Store) check(ctx context.Context, up *Uploaded) error {
	t, size, err := s.openRemote(ctx, up.Key)
	if err != nil {
		return fmt.Errorf("after upload: %w", err)
	}
	defer t.Close()
	if size != up.Size || t.Head().String() != up.Head {
		return fmt.Errorf("after upload, %s reads back as %d bytes with chain head %s; the local tape is %d bytes with %s", up.URL, size, t.Head(), up.Size, up.Head)
	}
	return nil
}

// putRecord writes the tape's summary object, unless one is there.
func (s *Store) putRecord(ctx context.Context, up *Uploaded) error {
	b, err := json.MarshalIndent(up.Record, "", "  ")
	if err != nil {
		return err
	}
	err = s.b.WriteAll(ctx, summaryKey(up.Key), b, &blob.WriterOptions{IfNotExist: true, ContentType: "application/json"})
	if err != nil && gcerrors.Code(err) != gcerrors.FailedPrecondition {
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
	dir := tapefmt.Sidecar(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil // none (what stands there, if anything, is not the tape's)
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
		if err := s.b.WriteAll(ctx, k, b, nil); err != nil {
			return s.wrap(k, err)
		}
	}
	return nil
}

// upload notes are kept in the tape's sidecar folder, by store.
type notes struct {
	Uploads []note `json:"uploads"`
}

type note struct {
	Store string    `json:"store"`
	Key   string    `json:"key"`
	Head  string    `json:"head"`
	At    time.Time `json:"at"`
}

func readNotes(path string) notes {
	var n notes
	b, err := os.ReadFile(filepath.Join(tapefmt.Sidecar(path), stateFile))
	if err == nil {
		json.Unmarshal(b, &n)
	}
	return n
}

// noteUpload records beside the tape that the store holds it.
func noteUpload(path, store string, up *Uploaded) error {
	n := readNotes(path)
	n.Uploads = slices.DeleteFunc(n.Uploads, func(u note) bool { return u.Store == store })
	n.Uploads = append(n.Uploads, note{Store: store, Key: up.Key, Head: up.Head, At: time.Now().UTC()})
	b, err := json.MarshalIndent(n, "", "  ")
	if err != nil {
		return err
	}
	return tapefmt.WriteSidecarFile(filepath.Join(tapefmt.Sidecar(path), stateFile), b)
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
		if u.Store == store && u.Head == head {
			return u.Key, true
		}
	}
	return "", false
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
