package sandbox

import (
	"context"
	"errors"
	"os"
	"runtime"
	"testing"
)

// These tests build and run on every platform: they prove, on Linux too,
// what a platform without the booth answers.

func TestSupportedOn(t *testing.T) {
	for _, c := range []struct {
		goos, goarch string
		want         string // "" for supported
	}{
		{"linux", "amd64", ""},
		{"linux", "arm64", ""},
		{"darwin", "arm64", "sandbox: the Shadow Booth needs Linux (user and mount namespaces, overlayfs); this is darwin/arm64"},
		{"darwin", "amd64", "sandbox: the Shadow Booth needs Linux (user and mount namespaces, overlayfs); this is darwin/amd64"},
		{"windows", "amd64", "sandbox: the Shadow Booth needs Linux (user and mount namespaces, overlayfs); this is windows/amd64"},
		{"windows", "arm64", "sandbox: the Shadow Booth needs Linux (user and mount namespaces, overlayfs); this is windows/arm64"},
		{"freebsd", "amd64", "sandbox: the Shadow Booth needs Linux (user and mount namespaces, overlayfs); this is freebsd/amd64"},
	} {
		err := supportedOn(c.goos, c.goarch)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s/%s: %v, want supported", c.goos, c.goarch, err)
			}
			continue
		}
		var ue *UnsupportedError
		if err == nil || err.Error() != c.want || !errors.Is(err, errors.ErrUnsupported) || !errors.As(err, &ue) {
			t.Errorf("%s/%s: %v, want %q matching errors.ErrUnsupported", c.goos, c.goarch, err, c.want)
			continue
		}
		if ue.Reason() != c.want[len("sandbox: "):] {
			t.Errorf("%s/%s: reason %q", c.goos, c.goarch, ue.Reason())
		}
	}
}

func TestSupportedIsThisPlatform(t *testing.T) {
	err := Supported()
	if (err == nil) != (runtime.GOOS == "linux") {
		t.Fatalf("Supported() on %s/%s = %v", runtime.GOOS, runtime.GOARCH, err)
	}
}

// TestProbeUnsupported: where the booth cannot run, Probe tries nothing
// (no scratch directory, no child) and says why.
func TestProbeUnsupported(t *testing.T) {
	dir := t.TempDir()
	c := probe(context.Background(), dir, supportedOn("darwin", "arm64"))
	want := "the Shadow Booth needs Linux (user and mount namespaces, overlayfs); this is darwin/arm64"
	if c.Unsupported != want || c.ExecMode != "" || c.UserNamespaces || c.Overlay || c.Reflink || len(c.Notes) != 0 {
		t.Fatalf("probe on darwin/arm64: %+v", c)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("probe on darwin/arm64 wrote %v", ents)
	}
}

// TestEntryPointsOnThisPlatform: Begin, Open, List and Recover refuse
// with Supported's error exactly where it is not nil, and work where it is.
func TestEntryPointsOnThisPlatform(t *testing.T) {
	ws := t.TempDir()
	unsupported := Supported()
	tx, err := Begin(ws, Options{})
	_, lerr := List(ws, Options{})
	_, rerr := Recover(context.Background(), ws, Options{})
	if unsupported != nil {
		_, oerr := Open(ws, "x", Options{})
		for name, err := range map[string]error{"Begin": err, "Open": oerr, "List": lerr, "Recover": rerr} {
			if !errors.Is(err, errors.ErrUnsupported) {
				t.Errorf("%s on %s/%s: %v, want %v", name, runtime.GOOS, runtime.GOARCH, err, unsupported)
			}
		}
		return
	}
	if err != nil || lerr != nil || rerr != nil {
		t.Fatalf("Begin %v, List %v, Recover %v", err, lerr, rerr)
	}
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
}
