//go:build !jukebox_nos3

package tapestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	tmtypes "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
	gcaws "gocloud.dev/aws"
)

// The S3 driver (s3://), built in by default; the build tag jukebox_nos3
// leaves it out (folders only). It is the AWS SDK's S3 client, configured
// from the URL's query as gocloud.dev's s3blob configured it (the same
// parameters, read by gocloud.dev/aws): region, endpoint, profile,
// anonymous, role..., request_checksum_calculation, with s3blob's own
// use_path_style, disable_https, accelerate, ssetype and kmskeyid.

func init() {
	builtIn["s3"] = true
	openers["s3"] = openS3
}

type s3Bucket struct {
	name   string
	client *s3.Client
	sse    types.ServerSideEncryption
	kmsKey string
	sums   aws.RequestChecksumCalculation
}

func openS3(ctx context.Context, u *url.URL) (driver, error) {
	if os.Getenv("AWS_RESPONSE_CHECKSUM_VALIDATION") == "" {
		// The AWS SDK logs a line on stderr for each ranged read, whose
		// response carries no checksum to validate; a tape checks its own
		// bytes (CRCs, the hash chain), so it asks for them only where
		// the operation requires one.
		os.Setenv("AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required")
	}
	q := u.Query()
	b := &s3Bucket{name: u.Host}
	var opts []func(*s3.Options)
	flag := func(key string, set func(o *s3.Options, v bool)) error {
		s := q.Get(key)
		if s == "" {
			return nil
		}
		q.Del(key)
		v, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("invalid value for %q: %w", key, err)
		}
		opts = append(opts, func(o *s3.Options) { set(o, v) })
		return nil
	}
	for key, set := range map[string]func(o *s3.Options, v bool){
		"accelerate":       func(o *s3.Options, v bool) { o.UseAccelerate = v },
		"disable_https":    func(o *s3.Options, v bool) { o.EndpointOptions.DisableHTTPS = v },
		"use_path_style":   func(o *s3.Options, v bool) { o.UsePathStyle = v },
		"s3ForcePathStyle": func(o *s3.Options, v bool) { o.UsePathStyle = v },
	} {
		if err := flag(key, set); err != nil {
			return nil, fmt.Errorf("S3 bucket %s: %w", u.Host, err)
		}
	}
	if s := q.Get("ssetype"); s != "" {
		q.Del("ssetype")
		for _, t := range types.ServerSideEncryptionAes256.Values() {
			if strings.EqualFold(string(t), s) {
				b.sse = t
			}
		}
		if b.sse == "" {
			return nil, fmt.Errorf("S3 bucket %s: %q is not a valid value for %q", u.Host, s, "ssetype")
		}
	}
	if s := q.Get("kmskeyid"); s != "" {
		q.Del("kmskeyid")
		b.kmsKey = s
	}
	cfg, err := gcaws.V2ConfigFromURLParams(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("S3 bucket %s: %w", u.Host, err)
	}
	// The SDK logs to stderr on its own (a 412 of two uploaders racing,
	// IMDS falling back): jukebox says what happened in its own words, and
	// --json keeps stdout and stderr to what the command prints.
	cfg.Logger = logging.Nop{}
	// The SDK reads an answer whole before it decodes it: a listing that
	// does not end (a store that is not what it says) is cut.
	base := cfg.HTTPClient
	if base == nil {
		base = awshttp.NewBuildableClient()
	}
	cfg.HTTPClient = cappedLists{base}
	// An answer cut there is the store's doing: asked again, it answers
	// the same (the SDK's retryer would read it three times over).
	opts = append(opts, func(o *s3.Options) {
		if o.Retryer != nil {
			o.Retryer = noRetryOnCut{o.Retryer}
		}
	})
	b.client = s3.NewFromConfig(cfg, opts...)
	b.sums = cfg.RequestChecksumCalculation // the transfer manager takes it apart from the client
	return b, nil
}

// code is what kind of failure an S3 error is.
func (b *s3Bucket) code(err error) error {
	if err == nil {
		return nil
	}
	var ae smithy.APIError
	var re *awshttp.ResponseError
	c := codeUnknown
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchBucket", "NoSuchKey", "NotFound", "ObjectNotInActiveTierError":
			c = codeNotFound
		case "PreconditionFailed":
			c = codeExists
		case "AccessDenied", "Forbidden":
			c = codeDenied
		case "InvalidRange", "InvalidArgument", "InvalidBucketName":
			c = codeInvalid
		}
	}
	if c == codeUnknown && errors.As(err, &re) {
		switch re.HTTPStatusCode() {
		case http.StatusNotFound, http.StatusMovedPermanently:
			c = codeNotFound
		case http.StatusUnauthorized, http.StatusForbidden:
			c = codeDenied
		case http.StatusPreconditionFailed:
			c = codeExists
		}
	}
	// The SDK's retryer has tried the request its attempts with backoff:
	// trying it again (try) would wait as long again three times over
	// (12 s for a store that is down, where the SDK's own attempts take
	// about 4).
	var gaveUp *retry.MaxAttemptsError
	if c == codeUnknown && errors.As(err, &gaveUp) {
		c = codeRetried
	}
	return coded(c, err)
}

func (b *s3Bucket) listPage(ctx context.Context, prefix, delim, token string) ([]listObject, string, error) {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(b.name), MaxKeys: aws.Int32(1000)}
	if prefix != "" {
		in.Prefix = aws.String(prefix)
	}
	if delim != "" {
		in.Delimiter = aws.String(delim)
	}
	if token != "" {
		in.ContinuationToken = aws.String(token)
	}
	out, err := b.client.ListObjectsV2(ctx, in)
	if errors.Is(err, errListCut) {
		return nil, "", coded(codeInvalid, err) // not tried again (try)
	}
	if err != nil {
		return nil, "", b.code(err)
	}
	objs := make([]listObject, 0, len(out.Contents)+len(out.CommonPrefixes))
	for _, o := range out.Contents {
		objs = append(objs, listObject{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified)})
	}
	for _, p := range out.CommonPrefixes {
		objs = append(objs, listObject{Key: aws.ToString(p.Prefix), IsDir: true})
	}
	// One page in key order, as S3 gives each of the two lists.
	sortObjects(objs)
	next := aws.ToString(out.NextContinuationToken)
	if !aws.ToBool(out.IsTruncated) {
		next = ""
	}
	return objs, next, nil
}

func (b *s3Bucket) attributes(ctx context.Context, key string) (attributes, error) {
	h, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.name), Key: aws.String(key)})
	if err != nil {
		return attributes{}, b.code(err)
	}
	return attributes{Size: aws.ToInt64(h.ContentLength), ETag: aws.ToString(h.ETag)}, nil
}

func (b *s3Bucket) rangeReader(ctx context.Context, key string, off, length int64) (io.ReadCloser, int64, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(b.name), Key: aws.String(key)}
	switch {
	case length == 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", off, off)) // S3 has no empty range
	case length > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", off, off+length-1))
	case off > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", off))
	}
	out, err := b.client.GetObject(ctx, in)
	if err != nil {
		return nil, 0, b.code(err)
	}
	size := aws.ToInt64(out.ContentLength)
	if cr := aws.ToString(out.ContentRange); cr != "" { // bytes A-B/SIZE
		if i := strings.LastIndexByte(cr, '/'); i >= 0 {
			if n, err := strconv.ParseInt(cr[i+1:], 10, 64); err == nil {
				size = n
			}
		}
	}
	body := out.Body
	if length == 0 {
		out.Body.Close()
		body = http.NoBody
	}
	return body, size, nil
}

func (b *s3Bucket) writer(ctx context.Context, key string, o writerOptions) (io.WriteCloser, error) {
	tm := transfermanager.New(b.client, func(t *transfermanager.Options) {
		t.RequestChecksumCalculation = b.sums
		if o.PartSize > 0 {
			t.PartSizeBytes = o.PartSize
		}
	})
	req := &transfermanager.UploadObjectInput{Bucket: aws.String(b.name), Key: aws.String(key), Metadata: o.Metadata}
	if o.ContentType != "" {
		req.ContentType = aws.String(o.ContentType)
	}
	if o.IfNotExist {
		req.IfNoneMatch = aws.String("*") // a conditional write
	}
	if b.sse != "" {
		req.ServerSideEncryption = tmtypes.ServerSideEncryption(b.sse)
	}
	if b.kmsKey != "" {
		req.SSEKMSKeyID = aws.String(b.kmsKey)
	}
	pr, pw := io.Pipe()
	w := &s3Writer{ctx: ctx, pw: pw, done: make(chan struct{})}
	req.Body = pr
	go func() {
		defer close(w.done)
		_, err := tm.UploadObject(ctx, req)
		if err != nil {
			w.err = b.code(err)
			pr.CloseWithError(err)
			return
		}
		pr.Close()
	}()
	return w, nil
}

// s3Writer feeds an upload through a pipe: the object is completed when
// the pipe ends, after Close; an upload whose context ends first is
// aborted.
type s3Writer struct {
	ctx  context.Context
	pw   *io.PipeWriter
	done chan struct{}
	err  error
}

func (w *s3Writer) Write(p []byte) (int, error) { return w.pw.Write(p) }

func (w *s3Writer) Close() error {
	if err := w.ctx.Err(); err != nil {
		w.pw.CloseWithError(err) // never the end of the body: nothing is completed
	} else {
		w.pw.Close()
	}
	<-w.done
	return w.err
}

func (b *s3Bucket) delete(ctx context.Context, key string) error {
	// S3 deletes a missing key without a word; the store wants to know.
	if _, err := b.attributes(ctx, key); err != nil {
		return err
	}
	_, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.name), Key: aws.String(key)})
	return b.code(err)
}

func (b *s3Bucket) close() error { return nil }

func (b *s3Bucket) abortUploads(ctx context.Context, key string, which func(initiated time.Time) bool) (int, error) {
	out, err := b.client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(b.name), Prefix: aws.String(key)})
	if err != nil {
		return 0, b.code(err)
	}
	n := 0
	var errs []error
	for _, u := range out.Uploads {
		if aws.ToString(u.Key) != key || (u.Initiated != nil && !which(*u.Initiated)) {
			continue
		}
		_, err := b.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(b.name), Key: u.Key, UploadId: u.UploadId})
		if err != nil {
			errs = append(errs, b.code(err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

func (b *s3Bucket) storedCRC32(ctx context.Context, key string) (string, bool, error) {
	h, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.name), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		return "", false, b.code(err)
	}
	sum := aws.ToString(h.ChecksumCRC32)
	return sum, sum != "", nil
}

// maxListAnswer bounds an answer to a listing request (a page of 1,000
// keys is a few hundred kilobytes of XML); a variable for a test.
var maxListAnswer int64 = 16 << 20

// cappedLists is an HTTP client whose answers to listing requests
// (ListObjectsV2, ListMultipartUploads) are cut past maxListAnswer: the
// SDK reads an answer whole before it decodes it, and one that did not
// end ran jukebox out of memory.
type cappedLists struct{ aws.HTTPClient }

func (c cappedLists) Do(r *http.Request) (*http.Response, error) {
	resp, err := c.HTTPClient.Do(r)
	if err != nil || r.Method != http.MethodGet {
		return resp, err
	}
	if q := r.URL.Query(); q.Has("list-type") || q.Has("uploads") {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: maxListAnswer}
	}
	return resp, nil
}

// errListCut is a listing's answer cut at maxListAnswer.
var errListCut = errors.New("a listing's answer over its bound (16 MiB): not a store's")

// noRetryOnCut is a retryer that does not try again a listing whose
// answer was cut.
type noRetryOnCut struct{ aws.Retryer }

func (r noRetryOnCut) IsErrorRetryable(err error) bool {
	return !errors.Is(err, errListCut) && r.Retryer.IsErrorRetryable(err)
}

// cappedBody fails a read past its bytes.
type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errListCut
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
