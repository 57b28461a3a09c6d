//go:build !jukebox_noazure

package tapestore

// The Azure driver (azblob://); the build tag jukebox_noazure leaves it out.
import _ "gocloud.dev/blob/azureblob"

func init() { builtIn["azblob"] = true }
