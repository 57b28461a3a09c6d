package tapestore

// The stores a URL can name: gocloud.dev's blob drivers register their
// schemes (s3, gs, azblob, file) with blob.OpenBucket.
import (
	_ "gocloud.dev/blob/azureblob"
	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/gcsblob"
	_ "gocloud.dev/blob/s3blob"
)
