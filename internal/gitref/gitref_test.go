package gitref

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// git runs the real git in dir.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestReadAgreesWithGit: on a branch, in a subfolder, detached, after
// git pack-refs, in a linked worktree and on a branch with no commit yet,
// Read says what git rev-parse says.
func TestReadAgreesWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed (Debian package git)")
	}
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "trunk")
	if r, ok := Read(repo); !ok || r.Branch != "trunk" || r.Commit != "" {
		t.Errorf("a branch with no commit: %+v %v", r, ok)
	}
	os.MkdirAll(filepath.Join(repo, "sub", "deep"), 0o755)
	os.WriteFile(filepath.Join(repo, "sub", "deep", "a.txt"), []byte("a"), 0o644)
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-qm", "one")
	head := git(t, repo, "rev-parse", "HEAD")
	check := func(what, dir, branch string) {
		t.Helper()
		r, ok := Read(dir)
		if !ok || r.Commit != git(t, dir, "rev-parse", "HEAD") || r.Branch != branch {
			t.Errorf("%s: %+v %v, want commit %s branch %q", what, r, ok, git(t, dir, "rev-parse", "HEAD"), branch)
		}
	}
	check("on a branch", repo, "trunk")
	check("in a subfolder", filepath.Join(repo, "sub", "deep"), "trunk")
	git(t, repo, "pack-refs", "--all")
	check("packed refs", repo, "trunk")
	wt := filepath.Join(t.TempDir(), "wt")
	git(t, repo, "worktree", "add", "-q", "-b", "side", wt)
	os.WriteFile(filepath.Join(wt, "b.txt"), []byte("b"), 0o644)
	git(t, wt, "add", ".")
	git(t, wt, "commit", "-qm", "two")
	check("a linked worktree", wt, "side")
	git(t, repo, "checkout", "-q", "--detach", head)
	check("detached", repo, "")
	if _, ok := Read(t.TempDir()); ok {
		t.Error("a folder in no repository reads as one")
	}
}

// TestReadRefusesRefsOutside: a HEAD planted to name a file outside the
// refs is not read.
func TestReadRefusesRefsOutside(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(dir, "secret"), []byte(strings.Repeat("a", 40)), 0o644)
	os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("ref: refs/../../secret\n"), 0o644)
	if r, ok := Read(dir); ok || r.Commit != "" {
		t.Errorf("a HEAD naming ../../secret: %+v %v", r, ok)
	}
}
