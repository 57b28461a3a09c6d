package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository's root, two folders up from this package.
const root = "../.."

// readmeMaxLines is the front door's limit: what Jukebox is, install, the
// two commands, a tour and links; the manual lives in docs/.
const readmeMaxLines = 250

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return string(b)
}

// TestREADMEIsAFrontDoor: README.md is at most readmeMaxLines lines and
// opens with the two commands that work on a fresh machine (the offline
// demo and every test).
func TestREADMEIsAFrontDoor(t *testing.T) {
	readme := read(t, "README.md")
	if n := strings.Count(readme, "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move the manual's part to docs/", n, readmeMaxLines)
	}
	first := strings.SplitN(readme, "```", 3)
	if len(first) < 3 {
		t.Fatal("README.md has no code block")
	}
	for _, cmd := range []string{"go run ./cmd/jukebox demo", "bash .ci/test"} {
		if !strings.Contains(first[1], cmd) {
			t.Errorf("README.md's first code block lacks %q", cmd)
		}
	}
}

// markdownFiles lists the Markdown files whose links are checked.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "CONTRIBUTING.md", "ARCHITECTURE.md", "tapefmt/FORMAT.md", "bench/README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md (%v): the manual moved", err)
	}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

var linkRe = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestLinksResolve: every relative link in the Markdown files names a file
// that exists, and a #fragment names a heading of the file it points to.
func TestLinksResolve(t *testing.T) {
	for _, file := range markdownFiles(t) {
		text := read(t, file)
		for _, m := range linkRe.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			rel := file
			if path != "" {
				rel = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
			}
			if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
				t.Errorf("%s links to %s, which does not exist", file, target)
				continue
			}
			if frag != "" && !anchors(read(t, rel))[frag] {
				t.Errorf("%s links to %s: %s has no heading #%s", file, target, rel, frag)
			}
		}
	}
}

// TestEveryManualPageLinked: each docs/*.md is linked from README.md, so
// no page of the manual is out of reach.
func TestEveryManualPageLinked(t *testing.T) {
	readme := read(t, "README.md")
	for _, file := range markdownFiles(t) {
		if !strings.HasPrefix(file, "docs/") {
			continue
		}
		if !strings.Contains(readme, "]("+file+")") {
			t.Errorf("README.md does not link to %s", file)
		}
	}
}

var nonSlug = regexp.MustCompile(`[^\p{L}\p{N} _-]`)

// anchors returns the GitHub-style anchors of a Markdown file's headings.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	inCode := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		slug := strings.ReplaceAll(nonSlug.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
		out[slug] = true
	}
	return out
}
