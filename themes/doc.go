// Package themes holds the named colour palettes of the turntable.
package themes
