//go:build !jukebox_nos3

package tapestore

import (
	"context"
	"errors"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// TestS3RetriedOnce: an S3 request the SDK's retryer gave up on is not
// tried again by the store's own attempts (try), which made a record
// whose store is down wait three times the SDK's backoff (12 s) before it
// said so; a failure the SDK did not retry still is.
func TestS3RetriedOnce(t *testing.T) {
	var b s3Bucket
	if err := b.code(&retry.MaxAttemptsError{Attempt: 3, Err: errors.New("connection refused")}); retryable(err) || codeOf(err) != codeRetried {
		t.Errorf("an error the SDK retried: code %v, retryable %v", codeOf(err), retryable(err))
	}
	if err := b.code(errors.New("connection reset")); !retryable(err) {
		t.Errorf("an error the SDK did not retry is not retried: %v", err)
	}

	// Against a port that refuses: one round of the SDK's attempts.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "id")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	u, err := url.Parse("s3://tapes?endpoint=http://" + addr + "&region=us-east-1&use_path_style=true")
	if err != nil {
		t.Fatal(err)
	}
	d, err := openS3(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	var calls int
	_, err = try(context.Background(), "HEAD", time.Minute, func(ctx context.Context) (attributes, error) {
		calls++
		return d.attributes(ctx, "x.jbx")
	})
	if err == nil || calls != 1 {
		t.Fatalf("a store that refuses: %d attempts of try, %v; want 1 and an error", calls, err)
	}
}
