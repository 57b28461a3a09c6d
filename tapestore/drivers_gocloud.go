//go:build jukebox_gcs || jukebox_azure

package tapestore

import (
	"context"
	"io"
	"net/url"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// gocloud.dev's blob drivers, for the schemes built in with a tag (gs://,
// azblob://): each opens through blob.OpenBucket.

// openGocloud opens u through gocloud.dev's URL mux.
func openGocloud(ctx context.Context, u *url.URL) (driver, error) {
	b, err := blob.OpenBucket(ctx, u.String())
	if err != nil {
		return nil, err
	}
	return gocloudBucket{b}, nil
}

type gocloudBucket struct{ b *blob.Bucket }

// code is what kind of failure a gocloud.dev error is.
func (gocloudBucket) code(err error) error {
	if err == nil {
		return nil
	}
	c := codeUnknown
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		c = codeNotFound
	case gcerrors.PermissionDenied:
		c = codeDenied
	case gcerrors.FailedPrecondition, gcerrors.AlreadyExists:
		c = codeExists
	case gcerrors.InvalidArgument, gcerrors.Unimplemented:
		c = codeInvalid
	}
	return coded(c, err)
}

func (g gocloudBucket) listPage(ctx context.Context, prefix, delim, token string) ([]listObject, string, error) {
	page := blob.FirstPageToken
	if token != "" {
		page = []byte(token)
	}
	objs, next, err := g.b.ListPage(ctx, page, 1000, &blob.ListOptions{Prefix: prefix, Delimiter: delim})
	if err != nil {
		return nil, "", g.code(err)
	}
	out := make([]listObject, len(objs))
	for i, o := range objs {
		out[i] = listObject{Key: o.Key, Size: o.Size, ModTime: o.ModTime, IsDir: o.IsDir}
	}
	return out, string(next), nil
}

func (g gocloudBucket) attributes(ctx context.Context, key string) (attributes, error) {
	a, err := g.b.Attributes(ctx, key)
	if err != nil {
		return attributes{}, g.code(err)
	}
	return attributes{Size: a.Size, ETag: a.ETag}, nil
}

func (g gocloudBucket) rangeReader(ctx context.Context, key string, off, length int64) (io.ReadCloser, int64, error) {
	r, err := g.b.NewRangeReader(ctx, key, off, length, nil)
	if err != nil {
		return nil, 0, g.code(err)
	}
	return r, r.Size(), nil
}

func (g gocloudBucket) writer(ctx context.Context, key string, o writerOptions) (io.WriteCloser, error) {
	w, err := g.b.NewWriter(ctx, key, &blob.WriterOptions{IfNotExist: o.IfNotExist, ContentType: o.ContentType, Metadata: o.Metadata, BufferSize: int(o.PartSize)})
	if err != nil {
		return nil, g.code(err)
	}
	return gocloudWriter{w, g}, nil
}

type gocloudWriter struct {
	w *blob.Writer
	g gocloudBucket
}

func (w gocloudWriter) Write(p []byte) (int, error) { return w.w.Write(p) }
func (w gocloudWriter) Close() error                { return w.g.code(w.w.Close()) }

func (g gocloudBucket) delete(ctx context.Context, key string) error {
	return g.code(g.b.Delete(ctx, key))
}

func (g gocloudBucket) close() error { return g.b.Close() }
