//go:build !jukebox_nos3

package tapestore

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"gocloud.dev/blob"
)

func init() { abortMultipart = abortS3Uploads }

// abortS3Uploads lists the multipart uploads of exactly key in bucket and
// aborts each begun at a time which accepts.
func abortS3Uploads(ctx context.Context, b *blob.Bucket, bucket, key string, which func(initiated time.Time) bool) (int, error) {
	var c *s3.Client
	if !b.As(&c) {
		return 0, nil
	}
	out, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket), Prefix: aws.String(key)})
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, u := range out.Uploads {
		if aws.ToString(u.Key) != key || (u.Initiated != nil && !which(*u.Initiated)) {
			continue
		}
		_, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: u.Key, UploadId: u.UploadId})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

func init() { storedCRC32 = s3CRC32 }

// s3CRC32 is the CRC32 checksum S3 keeps of the object under key (the
// SDK sends one with each part, which the store checks against the bytes
// it received): base64, "-N" after it for an object of N parts. ok is
// false when the store keeps none.
func s3CRC32(ctx context.Context, b *blob.Bucket, bucket, key string) (string, bool, error) {
	var c *s3.Client
	if !b.As(&c) {
		return "", false, nil
	}
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		return "", false, err
	}
	sum := aws.ToString(h.ChecksumCRC32)
	return sum, sum != "", nil
}
