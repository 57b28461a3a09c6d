//go:build jukebox_gcs

package main

import (
	"testing"

	"github.com/jukebox-os/jukebox/internal/gcstest"
)

// TestGCSStore runs the store round against fake-gcs-server, a Google
// Cloud Storage emulator (built from the tools module by the test
// command), through the native driver the tag jukebox_gcs builds in.
func TestGCSStore(t *testing.T) {
	s := gcstest.Start(t)
	s.Setenv(t)
	testStore(t, storeCase{url: s.Bucket(t, "tapes", "team/")})
}
