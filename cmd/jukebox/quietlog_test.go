package main

import (
	"bytes"
	"log"
	"testing"
)

// TestLibrariesDoNotWriteToStderr: a library logging with the standard
// logger (the S3 transfer manager, when two pushes of one tape raced)
// wrote its own lines into jukebox's stderr, which store.md says it does
// not. main silences that logger, which jukebox itself never uses.
func TestLibrariesDoNotWriteToStderr(t *testing.T) {
	var seen bytes.Buffer
	log.SetOutput(&seen)
	t.Cleanup(func() { log.SetOutput(&seen) })
	quietLibraries()
	log.Printf("failed to complete multipart upload for upload ID %v", 1)
	if seen.Len() != 0 {
		t.Errorf("the standard logger still writes: %q", seen.String())
	}
}
