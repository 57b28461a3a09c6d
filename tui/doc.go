// Package tui is the turntable: the Bubble Tea program behind `jukebox play`.
package tui
