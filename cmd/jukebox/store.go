package main

// Tapes in object storage (tapestore): --store on the commands that write
// a tape, push and pull, ls of a store, and a store URL wherever a command
// reads a tape.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/jukebox-os/jukebox/internal/kong"
	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/tapestore"
)

// tapeMapper takes a tape argument: an existing file, or a store URL that
// names a tape (checked here, fetched by Env.tape when the command runs);
// with folders, a folder too (type:"tapes": the command searches it).
type tapeMapper struct{ folders bool }

func withTapes() kong.Option {
	return kong.OptionFunc(func(k *kong.Kong) error {
		return errors.Join(kong.NamedMapper("tape", tapeMapper{}).Apply(k), kong.NamedMapper("tapes", tapeMapper{folders: true}).Apply(k))
	})
}

func (m tapeMapper) Decode(ctx *kong.DecodeContext, target reflect.Value) error {
	if target.Kind() == reflect.Slice { // positional: every value left
		for _, t := range ctx.Scan.PopWhile(func(t kong.Token) bool { return t.IsValue() }) {
			arg := fmt.Sprint(t.Value)
			if st, err := os.Stat(kong.ExpandPath(arg)); m.folders && err == nil && st.IsDir() {
				target.Set(reflect.Append(target, reflect.ValueOf(arg)))
				continue
			}
			if err := checkTapeArg(arg); err != nil {
				return err
			}
			target.Set(reflect.Append(target, reflect.ValueOf(arg)))
		}
		return nil
	}
	var arg string
	if err := ctx.Scan.PopValueInto("tape", &arg); err != nil {
		return err
	}
	if err := checkTapeArg(arg); err != nil {
		return err
	}
	target.SetString(arg)
	return nil
}

// checkTapeArg checks a tape argument as kong's existingfile does, or as a
// store URL that names a tape.
func checkTapeArg(arg string) error {
	if tapestore.IsURL(arg) {
		loc, err := tapestore.Parse(arg)
		if err != nil {
			return err
		}
		if loc.Name == "" {
			return fmt.Errorf("%s names a store, not a tape: add NAME.jbx (jukebox ls %s lists them)", arg, arg)
		}
		return nil
	}
	st, err := os.Stat(kong.ExpandPath(arg))
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", arg, pe.Err) // not "stat ARG: ..."
	}
	if err != nil {
		return err
	}
	if st.IsDir() {
		return fmt.Errorf("%s is a folder, not a tape", arg)
	}
	return nil
}

// tape is arg, or for a store URL the path of a local copy of the tape it
// names: from the cache, or fetched into it (a fresh temporary folder with
// --no-cache, removed when the command ends).
func (env *Env) tape(ctx context.Context, arg string) (string, error) {
	if !tapestore.IsURL(arg) {
		return arg, nil
	}
	path, cleanup, err := tapestore.Local(ctx, arg, env.NoCache)
	if err != nil {
		return "", err
	}
	env.cleanups = append(env.cleanups, cleanup)
	if env.named == nil {
		env.named = map[string]string{}
	}
	env.named[path] = arg
	return path, nil
}

// storeFlags upload a command's tape when it closes.
type storeFlags struct {
	Store        string        `placeholder:"URL" env:"JUKEBOX_STORE" help:"Upload the tape to this store when it closes (s3://BUCKET/PREFIX/, gs://, azblob://, file:///folder/; see docs/store.md). The tape stays local too; a store that is down keeps it for jukebox push."`
	StoreTimeout time.Duration `name:"store-timeout" default:"60s" env:"JUKEBOX_STORE_TIMEOUT" placeholder:"DURATION" help:"How long the upload to --store may take once the agent has ended (default 60s); then the tape stays local, the exit code is the agent's, and jukebox push uploads it later. Each request to the store gives up after JUKEBOX_STORE_REQUEST_TIMEOUT (20s) without an answer."`

	loc tapestore.Location
}

// validate reads --store before anything runs: a malformed URL is exit 2.
func (f *storeFlags) validate() error {
	if f.Store == "" {
		return nil
	}
	loc, err := tapestore.Parse(f.Store)
	if err != nil {
		return fmt.Errorf("--store %w", err)
	}
	if loc.Name != "" {
		return fmt.Errorf("--store %s names a tape; give the store (the URL without %s)", f.Store, loc.Name)
	}
	f.loc = loc
	return nil
}

// checkStore reaches the store before the run: a store that is down or
// refuses is a warning, and the run goes on (its tape kept for push). A
// URL its driver does not take (an unknown query parameter, a typo such
// as use_path_styl) is no store at all: exit 2 before the agent starts,
// as for a URL that does not parse, rather than a run that uploads
// nothing.
func (f *storeFlags) checkStore(ctx context.Context, w io.Writer) error {
	if f.Store == "" {
		return nil
	}
	s, err := tapestore.Open(ctx, f.loc)
	switch {
	case err != nil && !tapestore.Missing(err):
		return withCode(ExitUsage, fmt.Errorf("--store: %w", err))
	case err == nil:
		// One try, briefly: the run waits on it.
		cctx, cancel := context.WithTimeout(ctx, min(5*time.Second, tapestore.RequestTimeout(), f.timeout()))
		err = s.Check(cctx)
		cancel()
		s.Close()
	}
	if err != nil {
		fmt.Fprintf(w, "jukebox: warning: %v\njukebox: the run goes on; its tape stays local for jukebox push\n", err)
	}
	return nil
}

// upload sends the closed tape to the store. It never fails the run: an
// upload that does not go through says where the tape is and how to push
// it later.
func (f *storeFlags) upload(ctx context.Context, w io.Writer, path string) {
	if f.Store == "" || path == "" {
		return
	}
	// The run's exit code waits on this: it ends by --store-timeout, and
	// a signal (Ctrl-C) ends it at once.
	uctx, cancel := context.WithTimeoutCause(ctx, f.timeout(),
		fmt.Errorf("gave up after --store-timeout %s", f.timeout()))
	defer cancel()
	up, err := uploadTape(uctx, f.loc, path, w, tapestore.UploadOptions{})
	if err != nil {
		fmt.Fprintf(w, "jukebox: warning: the tape was not uploaded: %v\njukebox: it is kept at %s; jukebox push %s --store %s uploads it\n",
			err, path, termtext.ShellQuote(path), termtext.ShellQuote(f.Store))
		return
	}
	fmt.Fprintf(w, "jukebox: %s\n", uploadedLine(up))
}

// timeout is --store-timeout (60 s when unset, as in tests that build the
// flags by hand).
func (f *storeFlags) timeout() time.Duration {
	if f.StoreTimeout <= 0 {
		return 60 * time.Second
	}
	return f.StoreTimeout
}

// uploadTape uploads one tape, with progress on w for a long one (none
// when w is nil).
func uploadTape(ctx context.Context, loc tapestore.Location, path string, w io.Writer, opts tapestore.UploadOptions) (*tapestore.Uploaded, error) {
	s, err := tapestore.Open(ctx, loc)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if w != nil {
		opts.Progress = progressTo(w, "uploading "+filepath.Base(path))
	}
	up, err := s.UploadWith(ctx, path, opts)
	if err == nil && !up.Already {
		if err := putTables(ctx, s, path, up.Key); err != nil {
			up.TablesError = err.Error()
		}
	}
	return up, err
}

// progressTo reports a long transfer on w, at most once a second.
func progressTo(w io.Writer, what string) func(done, total int64) {
	var last time.Time
	start := time.Now()
	return func(done, total int64) {
		if now := time.Now(); now.Sub(last) >= time.Second && now.Sub(start) >= time.Second && done < total {
			last = now
			fmt.Fprintf(w, "jukebox: %s: %d of %d MB\n", what, done>>20, total>>20)
		}
	}
}

func uploadedLine(up *tapestore.Uploaded) string {
	note := ""
	if up.NoteError != "" {
		note = "; not noted beside the tape (" + up.NoteError + "): push asks the store about it next time"
	}
	if up.IndexError != "" {
		note += "; not in the store's index (" + up.IndexError + "): ls of the store misses it until jukebox reindex"
	}
	if up.TablesError != "" {
		note += "; its rows for query engines were not written (" + up.TablesError + "): jukebox export parquet writes them"
	}
	if up.Already {
		return fmt.Sprintf("%s: already in the store as %s%s", up.Path, up.URL, note)
	}
	checked := "verified before upload"
	if !up.Verified {
		checked = "DAMAGED, sent with --allow-damaged and marked so: " + up.VerifyError
	}
	return fmt.Sprintf("uploaded %s to %s (%d bytes; %s; %s%s)", termtext.Escape(up.Path), termtext.Escape(up.URL), up.Size, up.Proof, checked, termtext.Sanitize(note))
}

// PushCmd uploads tapes that are not in the store yet.
type PushCmd struct {
	Paths []string `arg:"" optional:"" name:"path" default:"tapes" help:"Tapes, or folders of tapes (default ./tapes); the store may come last instead of --store (jukebox push run.jbx s3://BUCKET/PREFIX/)."`
	Store string   `placeholder:"URL" env:"JUKEBOX_STORE" help:"The store (s3://BUCKET/PREFIX/, gs://, azblob://, file:///folder/)."`
	Check bool     `help:"Ask the store about every tape, also those noted as uploaded beside them."`
	JSON  bool     `help:"Print one JSON array, a result per tape (and no progress on stderr)."`
	// AllowDamaged sends tapes that do not verify, marked as damaged.
	AllowDamaged bool `help:"Upload a tape that does not verify all the same, marked as damaged in its summary (ls URL shows it); without it such a tape is not uploaded and push exits 3."`
}

// pushResult is one tape's outcome.
type pushResult struct {
	Path     string              `json:"path"`
	Uploaded *tapestore.Uploaded `json:"uploaded,omitempty"`
	Skipped  string              `json:"skipped,omitempty"` // noted as uploaded: the key
	// Recording: a run is still writing the tape (push from cron while an
	// agent runs); it is not sent, nor a failure: a later push sends it.
	Recording bool   `json:"recording,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Run uploads every tape not noted as uploaded to the store (idempotent:
// safe to run from cron); exit 1 when any upload failed.
func (c *PushCmd) Run(ctx context.Context, env *Env) error {
	if n := len(c.Paths); c.Store == "" && n > 0 && tapestore.IsURL(c.Paths[n-1]) {
		// The store given last, as a copy's destination is.
		c.Store, c.Paths = c.Paths[n-1], c.Paths[:n-1]
		if len(c.Paths) == 0 {
			c.Paths = []string{"tapes"}
		}
	}
	if c.Store == "" {
		return withCode(ExitUsage, errors.New("push needs the store: --store URL (or $JUKEBOX_STORE), or the URL last: jukebox push run.jbx s3://BUCKET/PREFIX/"))
	}
	for _, p := range c.Paths {
		if tapestore.IsURL(p) {
			return withCode(ExitUsage, fmt.Errorf("push %s: a tape to push is a file here; the store is %s", p, c.Store))
		}
	}
	loc, err := tapestore.Parse(c.Store)
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("--store %w", err))
	}
	if loc.Name != "" {
		return withCode(ExitUsage, fmt.Errorf("--store %s names a tape; give the store", c.Store))
	}
	paths, err := expandTapes(c.Paths)
	if err != nil {
		return err
	}
	var results []pushResult
	failed, damaged := 0, 0
	var progress io.Writer = env.Stderr
	if c.JSON {
		progress = nil
	}
	// A store that does not answer is found once, not by each tape's
	// retries in turn (a cron push of a thousand tapes took an hour to
	// say the store was down).
	noted := make([]string, len(paths)) // the key each was noted under ("": to send)
	var down error
	reached := false
	for i, p := range paths {
		if key, ok := tapestore.Noted(p, loc.String()); ok && !c.Check {
			noted[i] = key
		} else if !reached { // the first to send
			reached = true
			if down = reachStore(ctx, loc); down != nil {
				fmt.Fprintf(env.Stderr, "jukebox: push: %v\n", down)
			}
		}
	}
	for i, p := range paths {
		r := pushResult{Path: p}
		if noted[i] != "" {
			r.Skipped = noted[i]
		} else if tapefmt.Recording(p) {
			r.Recording = true
		} else if down != nil {
			r.Error, failed = "not tried: "+downReason(down), failed+1
		} else if r.Uploaded, err = uploadTape(ctx, loc, p, progress, tapestore.UploadOptions{AllowDamaged: c.AllowDamaged}); err != nil {
			r.Error, failed = err.Error(), failed+1
			if codeFor(err) == ExitBadTape { // it does not verify, or is no tape
				damaged++
			}
		}
		results = append(results, r)
		if c.JSON {
			continue
		}
		switch {
		case r.Error != "":
			fmt.Fprintf(env.Stdout, "FAILED %s: %s\n", termtext.Escape(p), termtext.Sanitize(r.Error))
		case r.Skipped != "":
			fmt.Fprintf(env.Stdout, "%s: uploaded before, as %s\n", termtext.Escape(p), termtext.Escape(loc.TapeURL(r.Skipped)))
		case r.Recording:
			fmt.Fprintf(env.Stdout, "%s: still being recorded: not sent (a push once its run has ended sends it)\n", termtext.Escape(p))
		default:
			fmt.Fprintln(env.Stdout, uploadedLine(r.Uploaded))
		}
	}
	if c.JSON {
		if err := writeJSON(env.Stdout, results); err != nil {
			return err
		}
	} else if len(paths) == 0 {
		fmt.Fprintf(env.Stdout, "no tapes in %s\n", strings.Join(c.Paths, ", "))
	}
	if failed > 0 {
		code := ExitInternal
		if damaged == failed {
			code = ExitBadTape
		}
		return withCode(code, fmt.Errorf("%d of %d tapes not uploaded (they stay local; push again)", failed, len(paths)))
	}
	return nil
}

// reachStore is nil when the store at loc answers a listing (with the
// retries a request has), else why not.
func reachStore(ctx context.Context, loc tapestore.Location) error {
	s, err := tapestore.Open(ctx, loc)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Check(ctx); err != nil {
		return fmt.Errorf("%s, so no tape was tried: %w", downReason(err), err)
	}
	return nil
}

// downReason says in a few words why a store did not take the first
// request: it refused the credentials, it is not there, or it did not
// answer.
func downReason(err error) string {
	switch {
	case tapestore.Refused(err):
		return "the store refused the credentials"
	case tapestore.Missing(err):
		return "the store is not there (its bucket or folder)"
	}
	return "the store does not answer"
}

// PullCmd downloads tapes from a store.
type PullCmd struct {
	URL    string `arg:"" help:"A tape in a store (…/NAME.jbx), or a store: every tape in it."`
	Output string `short:"o" type:"path" default:"tapes" placeholder:"DIR" help:"The folder to put them in (default ./tapes)."`
	JSON   bool   `help:"Print one JSON array, a result per tape."`
	// AllowDamaged keeps a tape that does not verify.
	AllowDamaged bool `name:"allow-damaged" help:"Keep a tape that does not verify (one pushed with push --allow-damaged), to read its faults: it is said damaged, and why."`
}

// Run downloads the tape (or every tape of the store) into the folder,
// each verified whole; a file there of another content is never
// overwritten.
func (c *PullCmd) Run(ctx context.Context, env *Env) error {
	s, loc, err := openStore(ctx, c.URL)
	if err != nil {
		return err
	}
	defer s.Close()
	keys := []string{loc.Name}
	if loc.Name == "" {
		entries, err := s.List(ctx)
		if err != nil {
			return err
		}
		keys = keys[:0]
		for _, e := range entries {
			keys = append(keys, e.Key)
		}
	}
	type pullResult struct {
		URL    string            `json:"url"`
		Pulled *tapestore.Pulled `json:"pulled,omitempty"`
		Error  string            `json:"error,omitempty"`
		// NotesError: the tape came, its sidecar files not all.
		NotesError string `json:"notes_error,omitempty"`
	}
	var results []pullResult
	var errs []error
	damaged := 0
	for _, k := range keys {
		r := pullResult{URL: s.Loc.TapeURL(k)}
		p, err := s.DownloadDamaged(ctx, k, c.Output, progressTo(env.Stderr, "downloading "+k), c.AllowDamaged)
		if err != nil {
			r.Error = err.Error()
			errs = append(errs, err)
			if codeFor(err) == ExitBadTape { // it does not verify, or is no tape
				damaged++
			}
		}
		r.Pulled = p
		if p != nil && p.NotesError != nil {
			r.NotesError = p.NotesError.Error()
		}
		results = append(results, r)
		if c.JSON {
			continue
		}
		if r.NotesError != "" {
			// The tape is here and verified (an interrupt may have come
			// just after): not a failure, and a pull again brings them.
			fmt.Fprintf(env.Stderr, "jukebox: %s: its notes (markers, rules) did not all come (%s): pull it again to bring them\n",
				termtext.Escape(r.URL), termtext.Sanitize(r.NotesError))
		}
		switch {
		case err != nil:
			fmt.Fprintf(env.Stdout, "FAILED %s: %s\n", termtext.Escape(r.URL), termtext.Sanitize(err.Error()))
		case p.Already:
			fmt.Fprintf(env.Stdout, "%s: already here as %s\n", termtext.Escape(r.URL), termtext.Escape(p.Path))
		case p.Damage != "":
			fmt.Fprintf(env.Stdout, "pulled %s to %s (%d bytes, DAMAGED: %s)\n", termtext.Escape(r.URL), termtext.Escape(p.Path), p.Size, termtext.Sanitize(p.Damage))
		default:
			fmt.Fprintf(env.Stdout, "pulled %s to %s (%d bytes, verified)\n", termtext.Escape(r.URL), termtext.Escape(p.Path), p.Size)
		}
	}
	if c.JSON {
		if err := writeJSON(env.Stdout, results); err != nil {
			return err
		}
	}
	if len(errs) > 0 {
		code := ExitInternal
		if damaged == len(errs) {
			code = ExitBadTape
		}
		return withCode(code, fmt.Errorf("%d of %d tapes not pulled: %w", len(errs), len(keys), errors.Join(errs...)))
	}
	return nil
}

// openStore reads a store URL (one that does not read is exit 2) and
// opens the store.
func openStore(ctx context.Context, raw string) (*tapestore.Store, tapestore.Location, error) {
	loc, err := tapestore.Parse(raw)
	if err != nil {
		return nil, loc, withCode(ExitUsage, err)
	}
	s, err := tapestore.Open(ctx, loc)
	return s, loc, err
}

// uploadChecks is the turntable's header word on a store's tape: what its
// summary object says was checked at upload, read once per tape.
func uploadChecks(ctx context.Context) func(string) (string, bool) {
	type word struct {
		text string
		bad  bool
	}
	said := map[string]word{}
	return func(url string) (string, bool) {
		w, ok := said[url]
		if !ok {
			w.text, w.bad = uploadCheck(ctx, url)
			said[url] = w
		}
		return w.text, w.bad
	}
}

func uploadCheck(ctx context.Context, url string) (string, bool) {
	r, err := tapestore.RecordOf(ctx, url)
	switch {
	case err != nil:
		return "upload record unreadable", true
	case r == nil:
		return "no upload record (not uploaded by jukebox)", false
	case !r.Verified:
		return "⚠ did not verify at upload", true
	}
	return "verified at upload " + r.Uploaded.Format("2006-01-02"), false
}

// CacheCmd shows and prunes the cache of tapes read from stores.
type CacheCmd struct {
	Info  cacheInfoCmd  `cmd:"" default:"1" help:"Where the cache is, what it holds and its bound (JUKEBOX_CACHE_MAX)."`
	Prune cachePruneCmd `cmd:"" help:"Remove what was used least recently until the cache holds at most --max (default: empty it)."`
}

type cacheInfoCmd struct {
	JSON bool `help:"Print it as JSON."`
}

func (c *cacheInfoCmd) Run(env *Env) error {
	if _, err := tapestore.CacheMax(); err != nil {
		return withCode(ExitUsage, err)
	}
	ci, err := tapestore.Info()
	if err != nil {
		return err
	}
	return printCache(env, ci, c.JSON, "")
}

type cachePruneCmd struct {
	Max  string `placeholder:"SIZE" default:"0" help:"What the cache may keep (4G, 500M, a number of bytes); 0 empties it."`
	JSON bool   `help:"Print what is left and what went as JSON."`
}

func (c *cachePruneCmd) Run(env *Env) error {
	max, err := tapestore.ParseSize(c.Max)
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("--max %q: %w", c.Max, err))
	}
	ci, err := tapestore.Prune(max)
	if err != nil {
		return err
	}
	return printCache(env, ci, c.JSON, fmt.Sprintf("removed %d files (%s)", ci.Removed, mib(ci.Freed)))
}

func printCache(env *Env, ci *tapestore.CacheInfo, asJSON bool, done string) error {
	if asJSON {
		return writeJSON(env.Stdout, ci)
	}
	if done != "" {
		fmt.Fprintln(env.Stdout, done)
	}
	fmt.Fprintf(env.Stdout, "cache %s: %s in %d files (%d tapes fetched whole), bound %s (JUKEBOX_CACHE_MAX)\n",
		ci.Dir, mib(ci.Bytes), ci.Files, ci.Tapes, mib(ci.Max))
	return nil
}

// mib is n bytes in MiB, or KiB and bytes below one (29 KB read "0.0 MiB").
func mib(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
