package tapestore

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// withAllDrivers marks every scheme built in for the test, so that what
// Parse reads of a URL is tested whatever the build tags.
func withAllDrivers(t *testing.T) {
	saved := make(map[string]bool, len(builtIn))
	for s, ok := range builtIn {
		saved[s] = ok
	}
	for _, s := range Schemes {
		builtIn[s] = true
	}
	t.Cleanup(func() {
		clear(builtIn)
		for s, ok := range saved {
			builtIn[s] = ok
		}
	})
}

// TestDriverNotBuilt: a store URL whose driver this binary lacks is an
// error naming the build tag that brings it and, for GCS and Azure, what
// reaches the store through S3 instead; before anything is reached.
func TestDriverNotBuilt(t *testing.T) {
	want := map[string][]string{
		"s3":     {"jukebox_nos3"},
		"gs":     {"-tags jukebox_gcs", "s3://BUCKET/PREFIX/?endpoint=https://storage.googleapis.com", "AWS_ACCESS_KEY_ID"},
		"azblob": {"-tags jukebox_azure", "S3-compatible gateway"},
	}
	for scheme, words := range want {
		had := builtIn[scheme]
		delete(builtIn, scheme)
		_, err := Parse(scheme + "://bucket/runs/")
		if had {
			builtIn[scheme] = true
		}
		if err == nil || !strings.Contains(err.Error(), "built without the "+scheme+":// driver") {
			t.Errorf("%s:// not built: %v, want it said", scheme, err)
			continue
		}
		for _, w := range words {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s:// not built: %v, want %q in it", scheme, err, w)
			}
		}
	}
}

// TestDefaultBuildDrivers: `go build ./cmd/jukebox` without tags links S3
// and folders and neither the GCS nor the Azure SDK, nor gocloud.dev/blob; each build tag adds
// or removes its own driver (go list -deps, so nothing is compiled).
func TestDefaultBuildDrivers(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		testenv.Unavailable(t, "the go command", "put Go on PATH")
	}
	gcs := []string{"gocloud.dev/blob/gcsblob", "cloud.google.com/go/storage"}
	azure := []string{"gocloud.dev/blob/azureblob", "github.com/Azure/azure-sdk-for-go/"}
	s3 := []string{"github.com/aws/aws-sdk-go-v2/service/s3"}
	// gocloud.dev/blob links gRPC and the OpenTelemetry SDK: only the
	// tags that bring its GCS or Azure driver bring it.
	gocloud := []string{"gocloud.dev/blob", "google.golang.org/grpc"}
	for _, c := range []struct {
		tags       string
		has, lacks []string
	}{
		{tags: "", has: s3, lacks: slices.Concat(gcs, azure, gocloud)},
		{tags: "jukebox_gcs", has: gcs, lacks: azure},
		{tags: "jukebox_azure", has: azure, lacks: gcs},
		{tags: "jukebox_nos3", lacks: slices.Concat(s3, gcs, azure, gocloud)},
	} {
		deps := listDeps(t, c.tags)
		for _, p := range c.has {
			if !hasDep(deps, p) {
				t.Errorf("go list -deps -tags=%q ./cmd/jukebox: %s missing", c.tags, p)
			}
		}
		for _, p := range c.lacks {
			if hasDep(deps, p) {
				t.Errorf("go list -deps -tags=%q ./cmd/jukebox links %s", c.tags, p)
			}
		}
	}
}

// listDeps is the packages the jukebox binary built with tags links,
// whatever GOFLAGS the test runs under.
func listDeps(t *testing.T, tags string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-tags="+tags, "./cmd/jukebox")
	cmd.Dir = testenv.RepoRoot(t)
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps -tags=%q ./cmd/jukebox: %v\n%s", tags, err, stderrOf(err))
	}
	return strings.Fields(string(out))
}

// hasDep reports whether a package path equals p or, for p ending in /,
// starts with it (a module).
func hasDep(deps []string, p string) bool {
	for _, d := range deps {
		if d == p || strings.HasSuffix(p, "/") && strings.HasPrefix(d, p) {
			return true
		}
	}
	return false
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
