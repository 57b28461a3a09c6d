//go:build !jukebox_nos3

package tapestore

// The S3 driver (s3://), built in by default; the build tag jukebox_nos3
// leaves it out (folders only).
import _ "gocloud.dev/blob/s3blob"

func init() { builtIn["s3"] = true }
