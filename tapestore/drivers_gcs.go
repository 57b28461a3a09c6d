//go:build jukebox_gcs

package tapestore

// The native GCS driver (gs://), built in with the tag jukebox_gcs only:
// its SDK (gRPC, xDS, protobuf descriptors) is tens of MB of the binary
// and most of the package initialisation a command would wait for.
import _ "gocloud.dev/blob/gcsblob"

func init() {
	builtIn["gs"] = true
	openers["gs"] = openGocloud
}
