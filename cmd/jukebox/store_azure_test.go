//go:build jukebox_azure

package main

import (
	"testing"

	"github.com/jukebox-os/jukebox/internal/azuretest"
)

// TestAzureStore runs the store round against Azurite, Microsoft's Azure
// Storage emulator (an npm package the test command installs), through
// the native driver the tag jukebox_azure builds in.
func TestAzureStore(t *testing.T) {
	s := azuretest.Start(t)
	s.Setenv(t)
	testStore(t, storeCase{url: s.Container(t, "tapes", "team/")})
}
