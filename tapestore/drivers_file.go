package tapestore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// The folder driver (file://): a key is a path below the folder. It reads
// and writes the layout gocloud.dev's fileblob used (which earlier
// releases wrote through): a key's file at its path, fileblob's ".attrs"
// files beside some of them, left out of listings. A write goes to a
// hidden file beside the key's and is renamed (or, for a write that must
// not replace an object, hard-linked) into place, so a reader never sees
// half an object.

func init() {
	builtIn["file"] = true
	openers["file"] = openFolder
}

const (
	attrsExt = ".attrs"  // fileblob's attributes files
	tmpExt   = ".jbxtmp" // a write not yet in place
)

type folder struct{ dir string }

func openFolder(_ context.Context, u *url.URL) (driver, error) {
	create := false
	for k, v := range u.Query() {
		switch k {
		case "create_dir":
			create = v[0] != "" && v[0] != "false" && v[0] != "0"
		case "metadata", "no_tmp_dir": // fileblob's; nothing to do here
		default:
			return nil, fmt.Errorf("folder store %s: unknown query parameter %q (known: create_dir)", u.Path, k)
		}
	}
	dir := filepath.FromSlash(u.Path)
	if create {
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return nil, err
		}
	}
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, coded(codeNotFound, fmt.Errorf("folder store %s does not exist (make it, or add ?create_dir=true to the URL)", dir))
	}
	if err != nil {
		return nil, coded(codeNotFound, fmt.Errorf("folder store: %w", err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("folder store %s: not a folder", dir)
	}
	return &folder{dir: dir}, nil
}

// path is key's file. A key that would leave the folder, or that names
// what a key cannot (fileblob's attributes, a write in progress, a
// folder), is invalid.
func (f *folder) path(key string) (string, error) {
	bad := key == "" || strings.HasSuffix(key, "/") || strings.Contains(key, "//") || strings.ContainsRune(key, 0) ||
		strings.HasSuffix(key, attrsExt) || strings.HasSuffix(key, tmpExt) || path.Clean("/"+key) != "/"+key
	if bad {
		return "", coded(codeInvalid, fmt.Errorf("folder store %s: %q is not a key it can hold", f.dir, key))
	}
	return filepath.Join(f.dir, filepath.FromSlash(key)), nil
}

func (f *folder) listPage(_ context.Context, prefix, delim, _ string) ([]listObject, string, error) {
	root := f.dir
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		if path.Clean("/"+prefix[:i]) != "/"+prefix[:i] {
			return nil, "", coded(codeInvalid, fmt.Errorf("folder store %s: prefix %q", f.dir, prefix))
		}
		root = filepath.Join(root, filepath.FromSlash(prefix[:i]))
	}
	var out []listObject
	last := "" // the last folded folder
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipAll // nothing under the prefix
			}
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while listed
			}
			return err
		}
		if p == f.dir {
			return nil
		}
		rel, err := filepath.Rel(f.dir, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if e.IsDir() {
			key += "/"
			if !strings.HasPrefix(key, prefix) && !strings.HasPrefix(prefix, key) {
				return filepath.SkipDir
			}
			if last != "" && strings.HasPrefix(key, last) {
				return filepath.SkipDir
			}
			return nil
		}
		name := e.Name()
		if !strings.HasPrefix(key, prefix) || strings.HasSuffix(name, attrsExt) || strings.HasSuffix(name, tmpExt) {
			return nil
		}
		if delim != "" {
			if i := strings.Index(key[len(prefix):], delim); i >= 0 {
				dir := key[:len(prefix)+i+len(delim)]
				if dir != last {
					out = append(out, listObject{Key: dir, IsDir: true})
					last = dir
				}
				return nil
			}
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		out = append(out, listObject{Key: key, Size: info.Size(), ModTime: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("folder store %s: %w", f.dir, err)
	}
	return out, "", nil
}

func (f *folder) stat(key string) (string, os.FileInfo, error) {
	p, err := f.path(key)
	if err != nil {
		return "", nil, err
	}
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) || err == nil && st.IsDir() {
		return "", nil, coded(codeNotFound, fmt.Errorf("folder store %s: %s: %w", f.dir, key, fs.ErrNotExist))
	}
	if errors.Is(err, fs.ErrPermission) {
		return "", nil, coded(codeDenied, err)
	}
	return p, st, err
}

func (f *folder) attributes(_ context.Context, key string) (attributes, error) {
	_, st, err := f.stat(key)
	if err != nil {
		return attributes{}, err
	}
	// fileblob's ETag, so that what a cache keyed by it kept still counts.
	return attributes{Size: st.Size(), ETag: fmt.Sprintf("\"%x-%x\"", st.ModTime().UnixNano(), st.Size())}, nil
}

func (f *folder) rangeReader(_ context.Context, key string, off, length int64) (io.ReadCloser, int64, error) {
	p, st, err := f.stat(key)
	if err != nil {
		return nil, 0, err
	}
	if off < 0 || off > st.Size() {
		return nil, 0, coded(codeInvalid, fmt.Errorf("folder store %s: %s: offset %d past its %d bytes", f.dir, key, off, st.Size()))
	}
	fh, err := os.Open(p)
	if err != nil {
		return nil, 0, err
	}
	var r io.Reader = io.NewSectionReader(fh, off, st.Size()-off)
	if length >= 0 {
		r = io.LimitReader(r, length)
	}
	return readCloser{r, fh}, st.Size(), nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

func (f *folder) writer(ctx context.Context, key string, o writerOptions) (io.WriteCloser, error) {
	p, err := f.path(key)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		return nil, err
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+"."+hex.EncodeToString(rnd[:])+tmpExt)
	fh, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return nil, err
	}
	return &folderWriter{ctx: ctx, f: fh, path: p, ifNotExist: o.IfNotExist}, nil
}

type folderWriter struct {
	ctx        context.Context
	f          *os.File
	path       string
	ifNotExist bool
	err        error
}

func (w *folderWriter) Write(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := w.f.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}

func (w *folderWriter) Close() error {
	tmp := w.f.Name()
	defer os.Remove(tmp) // gone already once in place
	err := w.f.Close()
	switch {
	case w.err != nil:
		return w.err
	case err != nil:
		return err
	case w.ctx.Err() != nil:
		return w.ctx.Err() // cut short: nothing appears
	case !w.ifNotExist:
		return os.Rename(tmp, w.path)
	}
	// Not over an object: a hard link fails where one is.
	err = os.Link(tmp, w.path)
	if errors.Is(err, fs.ErrExist) {
		return coded(codeExists, fmt.Errorf("%s: an object is there already", w.path))
	}
	if err != nil && !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.ENOTSUP) && !errors.Is(err, syscall.EXDEV) {
		return err
	}
	if err != nil { // a file system without hard links
		if _, serr := os.Lstat(w.path); serr == nil {
			return coded(codeExists, fmt.Errorf("%s: an object is there already", w.path))
		}
		return os.Rename(tmp, w.path)
	}
	return nil
}

func (f *folder) delete(_ context.Context, key string) error {
	p, err := f.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); errors.Is(err, fs.ErrNotExist) {
		return coded(codeNotFound, fmt.Errorf("folder store %s: %s: %w", f.dir, key, fs.ErrNotExist))
	} else if err != nil {
		return err
	}
	os.Remove(p + attrsExt) // fileblob's, where it wrote one
	return nil
}

func (f *folder) close() error { return nil }
