// Package gitref reads which commit and branch a working folder is on,
// from the repository's files alone (no git program is run): HEAD, the
// loose ref it names, else packed-refs. A leaf.
package gitref

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// Ref is where a working folder's repository stands.
type Ref struct {
	Commit string // the commit HEAD resolves to, hex; "" for a branch with no commit yet
	Branch string // the branch HEAD names; "" when HEAD is detached
}

// maxUp bounds the climb from the folder to its repository's root.
const maxUp = 64

// Read returns where the repository holding dir stands, and false when
// dir is in no repository or the repository cannot be read.
func Read(dir string) (Ref, bool) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Ref{}, false
	}
	for range maxUp {
		gitDir, common, ok := gitDirs(filepath.Join(dir, ".git"))
		if ok {
			return readHead(gitDir, common)
		}
		up := filepath.Dir(dir)
		if up == dir {
			break
		}
		dir = up
	}
	return Ref{}, false
}

// gitDirs resolves dotGit (a folder, or a worktree's file "gitdir: PATH")
// to the repository folder HEAD lives in and the common folder refs live in.
func gitDirs(dotGit string) (gitDir, common string, ok bool) {
	st, err := os.Stat(dotGit)
	switch {
	case err != nil:
		return "", "", false
	case st.IsDir():
		return dotGit, dotGit, true
	}
	b, err := os.ReadFile(dotGit)
	if err != nil {
		return "", "", false
	}
	p, found := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !found {
		return "", "", false
	}
	gitDir = strings.TrimSpace(p)
	if !filepath.IsAbs(gitDir) {
		gitDir = filepath.Join(filepath.Dir(dotGit), gitDir)
	}
	common = gitDir
	if c, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		common = strings.TrimSpace(string(c))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitDir, common)
		}
	}
	return gitDir, common, true
}

func readHead(gitDir, common string) (Ref, bool) {
	b, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return Ref{}, false
	}
	head := strings.TrimSpace(string(b))
	name, symbolic := strings.CutPrefix(head, "ref:")
	if !symbolic {
		return Ref{Commit: hexOrEmpty(head)}, isHex(head)
	}
	name = strings.TrimSpace(name)
	r := Ref{Branch: strings.TrimPrefix(name, "refs/heads/")}
	if !validRefName(name) {
		return Ref{}, false
	}
	for _, d := range []string{gitDir, common} {
		if b, err := os.ReadFile(filepath.Join(d, filepath.FromSlash(name))); err == nil {
			r.Commit = hexOrEmpty(strings.TrimSpace(string(b)))
			return r, true
		}
	}
	r.Commit = packed(filepath.Join(common, "packed-refs"), name)
	return r, true
}

// packed is the commit name has in a packed-refs file, or "".
func packed(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] == '#' || line[0] == '^' {
			continue
		}
		hash, ref, ok := bytes.Cut(line, []byte(" "))
		if ok && string(ref) == name {
			return hexOrEmpty(string(hash))
		}
	}
	return ""
}

// validRefName keeps a HEAD that names a ref outside refs/ (a planted
// "ref: ../../etc/passwd") from being read.
func validRefName(name string) bool {
	return strings.HasPrefix(name, "refs/") && !strings.Contains(name, "..") && !strings.ContainsAny(name, "\\\x00")
}

func hexOrEmpty(s string) string {
	if isHex(s) {
		return s
	}
	return ""
}

// isHex: a SHA-1 or SHA-256 object name.
func isHex(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
