//go:build jukebox_azure

package tapestore

// The native Azure Blob Storage driver (azblob://), built in with the tag
// jukebox_azure only: its SDK is left out of the default binary.
import _ "gocloud.dev/blob/azureblob"

func init() {
	builtIn["azblob"] = true
	openers["azblob"] = openGocloud
}
