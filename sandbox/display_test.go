package sandbox

import (
	"io/fs"
	"strings"
	"testing"
)

func TestSensitive(t *testing.T) {
	for _, c := range []struct {
		c    Change
		want string
	}{
		{Change{Path: ".git/hooks/pre-commit", Op: OpWrite, Mode: 0o755}, "git hook: git runs it; executable"},
		{Change{Path: "vendor/x/.git/config", Op: OpWrite, Mode: 0o644}, "git config"},
		{Change{Path: ".GIT/HOOKS/post-checkout", Op: OpSymlink}, "git hook"},
		{Change{Path: ".github/workflows/ci.yml", Op: OpWrite}, "CI workflow"},
		{Change{Path: ".gitlab-ci.yml", Op: OpWrite}, "CI configuration"},
		{Change{Path: "home/.bashrc", Op: OpSymlink, Target: "dotfiles/bashrc"}, "shell start-up file"},
		{Change{Path: ".zshrc", Op: OpDelete}, "shell start-up file"},
		{Change{Path: ".profile", Op: OpWrite}, "shell start-up file"},
		{Change{Path: ".bash_profile", Op: OpWrite}, "shell start-up file"},
		{Change{Path: ".ssh/authorized_keys", Op: OpWrite}, "ssh"},
		{Change{Path: ".env", Op: OpWrite}, "environment file"},
		{Change{Path: "app/.env.local", Op: OpWrite}, "environment file"},
		{Change{Path: "bin/tool", Op: OpChmod, Mode: 0o755}, "executable"},
		{Change{Path: "README.md", Op: OpWrite, Mode: 0o644}, ""},
		{Change{Path: ".github/ISSUE_TEMPLATE.md", Op: OpWrite}, ""},
		{Change{Path: ".git/objects/ab/cd", Op: OpDelete, Implied: true}, ""},
		{Change{Path: "environment", Op: OpWrite}, ""},
		{Change{Path: ".github/actions/setup/action.yml", Op: OpWrite}, "CI action"},
		{Change{Path: ".vscode/tasks.json", Op: OpWrite}, "editor task"},
		{Change{Path: ".vscode/extensions.json", Op: OpWrite}, ""},
		{Change{Path: ".pre-commit-config.yaml", Op: OpWrite}, "git hook"},
		{Change{Path: ".cargo/config.toml", Op: OpWrite}, "package manager configuration"},
		{Change{Path: "sub/.npmrc", Op: OpWrite}, "package manager configuration"},
		{Change{Path: "Jenkinsfile", Op: OpWrite}, "CI configuration"},
		{Change{Path: "Makefile", Op: OpWrite, Mode: 0o644}, "build file"},
		{Change{Path: "lib/GNUmakefile", Op: OpDelete}, "build file"},
		// What decides what jukebox, Python, pytest, npm or git run next
		// (a hostile agent planted a jukebox.json that jukebox test ran).
		{Change{Path: "tapes/jukebox.json", Op: OpWrite}, "jukebox test runs the command"},
		{Change{Path: "tapes/run.jbx", Op: OpWrite}, "a tape"},
		{Change{Path: "tapes/run.jbx.d/match.json", Op: OpWrite}, "match rules"},
		{Change{Path: "tests/conftest.py", Op: OpWrite}, "pytest runs it"},
		{Change{Path: ".venv/lib/python3.11/site-packages/x.pth", Op: OpWrite}, "Python path file"},
		{Change{Path: "sitecustomize.py", Op: OpWrite}, "Python runs it"},
		{Change{Path: "package.json", Op: OpWrite}, "npm runs its scripts"},
		{Change{Path: ".gitmodules", Op: OpWrite}, "git fetches"},
		// A hostile agent's second round: bytecode Python loads instead of
		// its unchanged source, and more of what editors, shells, hook
		// managers, package managers, cargo, mercurial and CI run.
		{Change{Path: "__pycache__/utils.cpython-311.pyc", Op: OpWrite}, "Python bytecode: Python runs it instead of its source"},
		{Change{Path: "lib/old.pyc", Op: OpWrite}, "Python bytecode"},
		{Change{Path: ".devcontainer.json", Op: OpWrite}, "dev container"},
		{Change{Path: "team.code-workspace", Op: OpWrite}, "editor workspace"},
		{Change{Path: ".bash_aliases", Op: OpWrite}, "shell start-up file"},
		{Change{Path: ".config/fish/config.fish", Op: OpWrite}, "shell start-up file"},
		{Change{Path: ".config/fish/functions/ls.fish", Op: OpWrite}, "shell start-up file (fish)"},
		{Change{Path: ".inputrc", Op: OpWrite}, "shell start-up file"},
		{Change{Path: "lefthook.yml", Op: OpWrite}, "git hook (lefthook)"},
		{Change{Path: ".pnpmfile.cjs", Op: OpWrite}, "pnpm runs it"},
		{Change{Path: "uv.toml", Op: OpWrite}, "uv installs from"},
		{Change{Path: "requirements.txt", Op: OpWrite}, "pip installs what it names"},
		{Change{Path: "crates/x/build.rs", Op: OpWrite}, "cargo runs it"},
		{Change{Path: ".hg/hgrc", Op: OpWrite}, "mercurial config"},
		{Change{Path: ".travis.yml", Op: OpWrite}, "CI configuration"},
		{Change{Path: "azure-pipelines.yml", Op: OpWrite}, "CI configuration"},
		{Change{Path: "bitbucket-pipelines.yml", Op: OpWrite}, "CI configuration"},
		{Change{Path: ".buildkite/pipeline.yml", Op: OpWrite}, "CI configuration"},
		{Change{Path: ".gitconfig", Op: OpWrite}, "git config"},
		{Change{Path: ".config/git/config", Op: OpWrite}, "git config"},
		// Files that decide what yarn, the editor, Python packaging, pip or
		// bazel run: a hostile agent's committed unmarked.
		{Change{Path: ".yarnrc.yml", Op: OpWrite}, "yarnPath runs on every yarn"},
		{Change{Path: ".vscode/settings.json", Op: OpWrite}, "editor settings"},
		{Change{Path: ".vscode/launch.json", Op: OpWrite}, "editor launch configuration"},
		{Change{Path: ".devcontainer/devcontainer.json", Op: OpWrite}, "dev container"},
		{Change{Path: "setup.py", Op: OpWrite}, "Python packaging runs it"},
		{Change{Path: "pyproject.toml", Op: OpWrite}, "Python packaging"},
		{Change{Path: "noxfile.py", Op: OpWrite}, "nox runs it"},
		{Change{Path: "tox.ini", Op: OpWrite}, "tox runs"},
		{Change{Path: "pip.conf", Op: OpWrite}, "pip installs from"},
		{Change{Path: ".pypirc", Op: OpWrite}, "credentials"},
		{Change{Path: ".bazelrc", Op: OpWrite}, "bazel"},
		{Change{Path: "dd", Op: OpMkdir, Mode: fs.ModeDir | fs.ModeSetgid | 0o777}, "setgid folder; a folder anyone may write in"},
		{Change{Path: "dd", Op: OpChmodDir, Mode: fs.ModeDir | 0o777}, "a folder anyone may write in"},
		{Change{Path: "tmp", Op: OpMkdir, Mode: fs.ModeDir | fs.ModeSticky | 0o777}, ""},
		{Change{Path: "notes/match.json", Op: OpWrite}, ""},
		{Change{Path: "link", Op: OpSymlink, Target: "/etc/passwd"}, "symlink pointing outside the workspace"},
		{Change{Path: "a/link", Op: OpSymlink, Target: "../../x"}, "symlink pointing outside the workspace"},
		{Change{Path: "a/link", Op: OpSymlink, Target: "../b/x"}, ""},
		{Change{Path: "a/link", Op: OpSymlink, Target: "c/../../b"}, ""},
	} {
		got := strings.Join(c.c.Sensitive(), "; ")
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s %s: sensitive %q, want %q", c.c.Op, c.c.Path, got, c.want)
		}
	}
}

func TestSummary(t *testing.T) {
	cs := ChangeSet{Changes: []Change{
		{Path: "a", Op: OpWrite}, {Path: "b", Op: OpWrite}, {Path: "c", Op: OpWrite},
		{Path: "d", Op: OpDelete, IsDir: true}, {Path: "d/x", Op: OpDelete, Implied: true},
		{Path: "l", Op: OpSymlink, Target: ".."}, {Path: "m", Op: OpSymlink, Target: "/abs"},
		{Path: ".git/hooks/pre-push", Op: OpWrite, Mode: 0o755},
	}, Refused: []Refusal{{Path: "p", Kind: RefusedFIFO, Reason: "a fifo"}}}
	want := "4 writes, 2 symlinks, 2 deletes (1 implied); 1 refused; 3 sensitive (marked !)"
	if got := cs.Summary(); got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if got := (ChangeSet{}).Summary(); got != "nothing staged" {
		t.Errorf("empty: %q", got)
	}
	if got := (ChangeSet{Refused: cs.Refused}).Summary(); got != "no changes; 1 refused" {
		t.Errorf("refused only: %q", got)
	}
}

// TestChangeStringDirectories: a directory's mode reads as ls shows it,
// with its d (it read -rwxr-xr-x, a file's).
func TestChangeStringDirectories(t *testing.T) {
	for _, c := range []struct {
		ch   Change
		want string
	}{
		{Change{Op: OpMkdir, Path: "out", Mode: 0o755}, "mkdir out drwxr-xr-x"},
		{Change{Op: OpChmodDir, Path: "out", Mode: 0o777 | fs.ModeSticky}, "chmod-dir out drwxrwxrwt"},
		{Change{Op: OpReplaceDir, Path: "cache", Mode: 0o700}, "replace-dir cache drwx------"},
		{Change{Op: OpWrite, Path: "a.txt", Size: 1, Mode: 0o644}, "write a.txt (1 bytes, -rw-r--r--)"},
	} {
		if got := c.ch.String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.ch.Op, got, c.want)
		}
	}
}
