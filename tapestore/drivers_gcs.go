//go:build !jukebox_nogcs

package tapestore

// The GCS driver (gs://); the build tag jukebox_nogcs leaves it out.
import _ "gocloud.dev/blob/gcsblob"

func init() { builtIn["gs"] = true }
