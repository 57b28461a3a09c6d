package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// Change sets are shown to a person who decides on them (the --commit ask
// prompt, booth diff), and every name in them was chosen by the agent. So
// nothing of a name reaches the terminal as it is unless it is plain:
// internal/termtext quotes it (termtext.Quote, termtext.Escape).

// Sensitive returns why a change deserves a second look before it is
// committed, or nil: git metadata and hooks, CI configuration and
// actions, editor tasks, package managers' configuration, build files,
// shell start-up files, ssh keys and configuration, environment files,
// symlinks pointing outside the workspace, and anything made executable
// or setuid/setgid. Implied deletes are not
// flagged (the delete of their parent is).
func (c Change) Sensitive() []string {
	if c.Implied {
		return nil
	}
	why := sensitivePath(c.Path)
	if (c.Op == OpWrite || c.Op == OpChmod) && c.Mode&0o111 != 0 {
		why = append(why, "executable")
	}
	if (c.Op == OpWrite || c.Op == OpChmod) && c.Mode&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
		why = append(why, "setuid/setgid")
	}
	if c.Op == OpMkdir || c.Op == OpReplaceDir || c.Op == OpChmodDir {
		if c.Mode&fs.ModeSetgid != 0 {
			why = append(why, "setgid folder")
		}
		if c.Mode&0o002 != 0 && c.Mode&fs.ModeSticky == 0 {
			why = append(why, "a folder anyone may write in")
		}
	}
	if c.Owner != "" && !yourOwner(c.Owner) {
		why = append(why, "owned by "+c.Owner+", not by you: another account may write it")
	}
	if c.Op == OpSymlink && (c.chainOut || leadsOut(c.Path, c.Target)) {
		why = append(why, "symlink pointing outside the workspace")
	}
	return why
}

// yourOwner reports whether owner ("uid:gid") names this process's user:
// a file an agent gave back to you (it recreated one another account
// owned) is a change of owner, and no second look.
func yourOwner(owner string) bool {
	uid, _, _ := strings.Cut(owner, ":")
	return uid == strconv.Itoa(os.Geteuid())
}

// shellStartup are file names a shell (or direnv) runs by itself.
var shellStartup = map[string]bool{
	".bashrc": true, ".bash_profile": true, ".bash_login": true, ".bash_logout": true,
	".profile": true, ".zshrc": true, ".zshenv": true, ".zprofile": true, ".zlogin": true,
	".cshrc": true, ".tcshrc": true, ".kshrc": true, ".envrc": true,
	".bash_aliases": true, // Debian's and Ubuntu's .bashrc runs it
	"config.fish":   true, ".inputrc": true,
}

// sensitiveDirs are folders whose content is sensitive, in the order
// tried: a folder's name, the name of the entry in it ("" for any) and
// why; names are lower case.
var sensitiveDirs = []struct{ dir, next, why string }{
	{".git", "hooks", "git hook: git runs it"},
	{".git", "config", "git config: it can make git run commands"},
	{".git", "", "git metadata"},
	{".husky", "", "git hook (husky): git runs it"},
	{".github", "workflows", "CI workflow: it runs on push"},
	{".github", "actions", "CI action: workflows run it"},
	{".circleci", "", "CI configuration"},
	{".buildkite", "", "CI configuration"},
	{".hg", "hgrc", "mercurial config: its hooks run commands"},
	{".hg", "", "mercurial metadata"},
	{".config", "fish", "shell start-up file (fish): a shell runs it"},
	{".config", "git", "git config: it can make git run commands"},
	{"__pycache__", "", "Python bytecode: Python runs it instead of its source"},
	{".ssh", "", "ssh keys and configuration"},
	{".vscode", "tasks.json", "editor task: the editor runs it"},
	{".vscode", "launch.json", "editor launch configuration: the editor runs what it names"},
	{".vscode", "settings.json", "editor settings: they can name programs the editor runs"},
	{".devcontainer", "", "dev container configuration: the editor builds and runs it"},
	{".cargo", "config.toml", "package manager configuration: it can make cargo run commands"},
	{".cargo", "config", "package manager configuration: it can make cargo run commands"},
}

// sensitiveNames are file names that are sensitive wherever they are,
// lower case, with why.
var sensitiveNames = map[string]string{
	".gitlab-ci.yml":          "CI configuration",
	"jenkinsfile":             "CI configuration",
	".pre-commit-config.yaml": "git hook (pre-commit): git runs what it names",
	".npmrc":                  "package manager configuration: it can make npm run commands",
	"makefile":                "build file: make runs it",
	"gnumakefile":             "build file: make runs it",
	"jukebox.json":            "jukebox test runs the command it names",
	"conftest.py":             "pytest runs it",
	"sitecustomize.py":        "Python runs it at start-up",
	"usercustomize.py":        "Python runs it at start-up",
	"package.json":            "npm runs its scripts",
	".gitmodules":             "git fetches and checks out what it names",
	".yarnrc.yml":             "package manager configuration: its yarnPath runs on every yarn",
	".yarnrc":                 "package manager configuration: it can make yarn run commands",
	"setup.py":                "Python packaging runs it",
	"pyproject.toml":          "Python packaging runs the build it names",
	"noxfile.py":              "nox runs it",
	"tox.ini":                 "tox runs the commands it names",
	"pip.conf":                "package manager configuration: it names the index pip installs from",
	".pypirc":                 "package index credentials",
	".bazelrc":                "build configuration: it can make bazel run commands",
	".devcontainer.json":      "dev container configuration: the editor builds and runs it",
	".gitconfig":              "git config: it can make git run commands",
	"lefthook.yml":            "git hook (lefthook): git runs what it names",
	"lefthook.yaml":           "git hook (lefthook): git runs what it names",
	".lefthook.yml":           "git hook (lefthook): git runs what it names",
	".lefthook.yaml":          "git hook (lefthook): git runs what it names",
	".pnpmfile.cjs":           "pnpm runs it on every install",
	"uv.toml":                 "package manager configuration: it names the index uv installs from",
	"requirements.txt":        "pip installs what it names, from the index it names",
	"build.rs":                "cargo runs it when it builds",
	".travis.yml":             "CI configuration",
	"azure-pipelines.yml":     "CI configuration",
	"bitbucket-pipelines.yml": "CI configuration",
}

// sensitivePath says why a workspace path is sensitive, whatever is done
// to it. Names are compared without regard to case, as a case-insensitive
// file system (or a checkout on one) would.
func sensitivePath(p string) []string {
	parts := strings.Split(strings.ToLower(p), "/")
	base := parts[len(parts)-1]
	var why []string
dirs:
	for i, part := range parts {
		next := ""
		if i+1 < len(parts) {
			next = parts[i+1]
		}
		for _, d := range sensitiveDirs {
			if part == d.dir && (d.next == "" || d.next == next) {
				why = append(why, d.why)
				break dirs
			}
		}
	}
	switch {
	case sensitiveNames[base] != "":
		why = append(why, sensitiveNames[base])
	case shellStartup[base]:
		why = append(why, "shell start-up file: a shell runs it")
	case base == ".env" || strings.HasPrefix(base, ".env."):
		why = append(why, "environment file: often holds secrets")
	case strings.HasSuffix(base, ".pyc"):
		why = append(why, "Python bytecode: Python may run it instead of its source")
	case strings.HasSuffix(base, ".code-workspace"):
		why = append(why, "editor workspace: its tasks can run when the folder opens")
	case strings.HasSuffix(base, ".pth"):
		why = append(why, "Python path file: Python runs its import lines at start-up")
	case strings.HasSuffix(base, ".jbx"):
		why = append(why, "a tape: jukebox replay runs its recorded command")
	case base == "match.json" && len(parts) > 1 && strings.HasSuffix(parts[len(parts)-2], ".jbx.d"):
		why = append(why, "a tape's match rules: they decide what its replay accepts")
	}
	return why
}

// leadsOut reports whether the symlink at p with target leads out of the
// workspace: an absolute target, or one with more ".." than p has
// folders above it.
func leadsOut(p, target string) bool {
	if path.IsAbs(target) {
		return true
	}
	j := path.Join(path.Dir(p), target)
	return j == ".." || strings.HasPrefix(j, "../")
}

// resolvesOut reports whether the symlink at p with target, followed
// through the links link gives (the workspace's symlinks by path, with
// their targets), leaves the workspace: each link checked alone may stay
// inside it while a chain of them leads out (b/c -> ../d/e, d/e -> ..,
// a -> b/c/..). A loop leads nowhere.
func resolvesOut(p, target string, link func(rel string) (string, bool)) bool {
	hops := 0
	var walk func(dir []string, target string) ([]string, bool)
	walk = func(dir []string, target string) ([]string, bool) {
		if path.IsAbs(target) {
			return nil, true
		}
		cur := slices.Clone(dir)
		for part := range strings.SplitSeq(target, "/") {
			switch part {
			case "", ".":
				continue
			case "..":
				if len(cur) == 0 {
					return nil, true
				}
				cur = cur[:len(cur)-1]
				continue
			}
			cur = append(cur, part)
			t, ok := link(strings.Join(cur, "/"))
			if !ok {
				continue
			}
			if hops++; hops > 40 {
				return nil, false // a loop: it leads nowhere
			}
			var out bool
			if cur, out = walk(cur[:len(cur)-1], t); out {
				return nil, true
			}
		}
		return cur, false
	}
	var dir []string
	if d := path.Dir(p); d != "." {
		dir = strings.Split(d, "/")
	}
	_, out := walk(dir, target)
	return out
}

// opOrder is the order Summary counts operations in.
var opOrder = []Op{OpWrite, OpChmod, OpSymlink, OpMkdir, OpReplaceDir, OpChmodDir, OpDelete}

// Summary counts the change set per operation, for a heading: "3 writes,
// 1 delete, 2 symlinks; 1 refused; 1 sensitive (marked !)", or "nothing
// staged".
func (cs ChangeSet) Summary() string {
	if cs.Empty() {
		return "nothing staged"
	}
	counts := cs.Counts()
	implied, sensitive := 0, 0
	for _, c := range cs.Changes {
		if c.Implied {
			implied++
		}
		if len(c.Sensitive()) > 0 {
			sensitive++
		}
	}
	var parts []string
	for _, op := range opOrder {
		if n := counts[op]; n > 0 {
			s := termtext.Count(n, string(op), string(op)+"s")
			if op == OpDelete && implied > 0 {
				s += fmt.Sprintf(" (%d implied)", implied)
			}
			parts = append(parts, s)
		}
	}
	for op, n := range counts { // an operation this list does not know yet
		if op != tapefmt.OpRefused && !containsOp(opOrder, op) {
			parts = append(parts, termtext.Count(n, string(op), string(op)+"s"))
		}
	}
	out := strings.Join(parts, ", ")
	if out == "" {
		out = "no changes"
	}
	if n := len(cs.Refused); n > 0 {
		out += fmt.Sprintf("; %d refused", n)
	}
	if sensitive > 0 {
		out += fmt.Sprintf("; %d sensitive (marked !)", sensitive)
	}
	return out
}

// Count is how many changes cs holds: "1 change", "3 changes".
func (cs ChangeSet) Count() string { return termtext.Count(len(cs.Changes), "change", "changes") }

func containsOp(ops []Op, op Op) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}

// refusalFor names what a staged entry of mode m is (a fifo, socket or
// device, or something stranger) and why it cannot be committed.
func refusalFor(p string, m fs.FileMode) Refusal {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return Refusal{Path: p, Kind: RefusedFIFO, Reason: "a fifo (named pipe) cannot be committed"}
	case m&fs.ModeSocket != 0:
		return Refusal{Path: p, Kind: RefusedSocket, Reason: "a socket cannot be committed"}
	case m&fs.ModeDevice != 0:
		return Refusal{Path: p, Kind: RefusedDevice, Reason: "a device file cannot be committed"}
	}
	return Refusal{Path: p, Kind: RefusedUnreadable, Reason: fmt.Sprintf("an entry of a type the booth cannot commit (%v)", m.Type())}
}

// pairRefusal is the refusal of a write to a real file with n names (a
// hard-link pair the workspace held before the run): the commit puts a
// new file at the path, so the other names would keep the old content.
func pairRefusal(p string, n uint64) Refusal {
	return Refusal{Path: p, Kind: RefusedHardLink,
		Reason: fmt.Sprintf("a hard link (the real file has %d names): committing the write would split them, the other names keeping the old content; edit it after the run, or break the link first", n)}
}

// hardLinkRefusal is the refusal of a file with n names.
func hardLinkRefusal(p string, n uint64) Refusal {
	return Refusal{Path: p, Kind: RefusedHardLink,
		Reason: fmt.Sprintf("a hard link (the file has %d names): hard links are committed when all the names are in the change set of an overlay or in-process run; this one could share its inode with a file anywhere", n)}
}

// pathMax is Linux's PATH_MAX: the longest path, its NUL included, that
// a system call takes.
const pathMax = 4096

// tooLong reports whether an absolute path is too long to hand to the
// kernel.
func tooLong(abs string) bool { return len(abs) >= pathMax }

// longRefusal is the refusal of a path over PATH_MAX.
func longRefusal(p string, dir bool) Refusal {
	what := "its path is"
	if dir {
		what = "the path of this directory (and of everything under it) is"
	}
	return Refusal{Path: p, Kind: RefusedPathTooLong,
		Reason: fmt.Sprintf("%s longer than the system allows (PATH_MAX, %d bytes) where the booth stages it", what, pathMax)}
}

// foreignStateRefusal is the refusal of a change at or under another
// workspace's jukebox state folder (workspace.foreignState).
func foreignStateRefusal(p string) Refusal {
	return Refusal{Path: p, Kind: RefusedJukeboxState,
		Reason: "another workspace's jukebox state (its booth transactions, whose staged files its booth commit applies): a run never commits there; run jukebox in that folder to change it"}
}

// unreadableRefusal is the refusal of an entry the booth could not read.
// The error's own path (the staging area's) is left out: the refusal
// names the workspace path.
func unreadableRefusal(p string, err error) Refusal {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return Refusal{Path: p, Kind: RefusedUnreadable, Reason: "the booth could not read it: " + err.Error()}
}

// sortRefusals orders refusals by path, one per path (the first kept).
func sortRefusals(rs []Refusal) []Refusal {
	if len(rs) == 0 {
		return nil
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Path < rs[j].Path })
	out := rs[:1]
	for _, r := range rs[1:] {
		if r.Path != out[len(out)-1].Path {
			out = append(out, r)
		}
	}
	return out
}
