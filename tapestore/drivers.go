package tapestore

// The stores a URL can name: gocloud.dev's blob drivers register their
// schemes with blob.OpenBucket. The file driver is always built in; each
// cloud's comes with its SDK, tens of MB of the binary, and a team that
// does not use it can leave it out with a build tag (drivers_*.go):
//
//	go build -tags jukebox_nogcs,jukebox_noazure ./cmd/...
import (
	_ "gocloud.dev/blob/fileblob"
)

// builtIn is the schemes whose drivers this binary holds (the files of the
// drivers' build tags add theirs).
var builtIn = map[string]bool{"file": true}

// leftOut is the build tag that leaves a scheme's driver out.
var leftOut = map[string]string{"s3": "jukebox_nos3", "gs": "jukebox_nogcs", "azblob": "jukebox_noazure"}
