package tapestore

import (
	"context"
	"net/url"

	"gocloud.dev/blob"
)

// abortMultipart, where the binary holds a driver whose store keeps the
// parts of unfinished multipart uploads (S3), aborts those of key (its
// full key in the bucket) and returns how many it aborted.
var abortMultipart func(ctx context.Context, b *blob.Bucket, bucket, key string) (int, error)

// abortUploads aborts the unfinished multipart uploads of key, each
// request with its deadline: those an upload cut short left (a stall, a
// crash of jukebox or of the store). A store that has no such thing, or
// does not answer, aborts none (docs/store.md gives the lifecycle rule
// that removes what is left).
func (s *Store) abortUploads(ctx context.Context, key string) (int, error) {
	if abortMultipart == nil || s.Loc.Scheme != "s3" {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	u, err := url.Parse(s.Loc.bucket)
	if err != nil {
		return 0, err
	}
	return abortMultipart(ctx, s.b, u.Host, s.Loc.Prefix+key)
}
