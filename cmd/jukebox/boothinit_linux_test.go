package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestBoothInitHelper: record --booth starts jukebox-booth, installed
// beside jukebox, as the booth's init; one built from other source (here,
// a stand-in that answers as an older build would) or one others may
// write is passed over for jukebox itself, and the run goes on confined.
// The agent sees which init it has as PID 1's command line.
func TestBoothInitHelper(t *testing.T) {
	testenv.Short(t, "runs jukebox and jukebox-booth whole")
	requireConfinedBooth(t)
	built, bin := testenv.Binaries(t), t.TempDir() // a copy: the test changes jukebox-booth beside it
	for _, name := range []string{"jukebox", "jukebox-booth"} {
		data, err := os.ReadFile(filepath.Join(built, name))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(bin, name), data, 0o755))
	}
	helper := filepath.Join(bin, "jukebox-booth")
	pid1 := func(t *testing.T) string {
		t.Helper()
		ws := t.TempDir()
		cmd := exec.Command(filepath.Join(bin, "jukebox"), "record", "--booth", "--commit", "never",
			"-o", filepath.Join(t.TempDir(), "r.jbx"), "--", "sh", "-c", `tr '\0' ' ' < /proc/1/cmdline`)
		cmd.Dir = ws
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("record --booth: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := pid1(t); got != "jukebox-booth" {
		t.Errorf("with jukebox-booth beside jukebox, PID 1 is %q", got)
	}
	must(t, os.Chmod(helper, 0o775))
	if got := pid1(t); got != "jukebox-booth-init" {
		t.Errorf("with a group-writable jukebox-booth, PID 1 is %q, want jukebox itself", got)
	}
	must(t, os.Remove(helper))
	must(t, os.WriteFile(helper, []byte("#!/bin/sh\necho 'setup: this init was built from other source than jukebox' >&3\nexit 124\n"), 0o755))
	if got := pid1(t); got != "jukebox-booth-init" {
		t.Errorf("with a jukebox-booth of other source, PID 1 is %q, want jukebox itself", got)
	}
}
