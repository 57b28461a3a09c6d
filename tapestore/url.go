package tapestore

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/jukebox-os/jukebox/redact"
)

// Schemes are the stores a URL can name.
var Schemes = []string{"s3", "gs", "azblob", "file"}

// TapeExt ends a tape's name, local or in a store.
const TapeExt = ".jbx"

// Location is a parsed store URL: where the bucket is, the key prefix of
// the store in it, and, for a URL that names a tape, the tape's name.
type Location struct {
	Scheme string
	bucket string // the URL blob.OpenBucket takes: scheme://bucket?query
	Prefix string // the store's keys start with it; "" or ending in "/"
	Name   string // the tape's name below Prefix, "" for a store
	shown  string // the URL as given, for messages
}

// ErrNotURL is returned by Parse for a string that is no store URL at all
// (a local path): the caller then takes it as a path.
var ErrNotURL = errors.New("not a store URL")

// IsURL reports whether s looks like a URL (scheme://…), known or not: a
// reading command takes such an argument as a store, never as a path.
func IsURL(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	return ok && scheme != "" && !strings.ContainsAny(scheme, "/\\.")
}

// Parse reads a store or tape URL. A URL whose path ends in .jbx names a
// tape; any other names a store (a trailing / is optional). An unknown
// scheme, a missing bucket or a query that is not one is an error naming
// the URL.
func Parse(raw string) (Location, error) {
	if !IsURL(raw) {
		return Location{}, fmt.Errorf("%q: %w (want scheme://bucket/prefix/, one of %s)", raw, ErrNotURL, strings.Join(Schemes, ", "))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Location{}, fmt.Errorf("store URL %q: %w", raw, err)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return Location{}, fmt.Errorf("store URL %q: the query does not read: %w", masked(u), err)
	}
	for k, vs := range q {
		if credentialParam(k) {
			return Location{}, fmt.Errorf("store URL %s: %q: %s", masked(u), k, noCredentials)
		}
		for _, v := range vs {
			if e, err := url.Parse(v); err == nil && e.User != nil {
				return Location{}, fmt.Errorf("store URL %s: %s=: %s", masked(u), k, noCredentials)
			}
		}
	}
	if !slices.Contains(Schemes, u.Scheme) {
		return Location{}, fmt.Errorf("store URL %q: unknown scheme %q (known: %s)", masked(u), u.Scheme, strings.Join(Schemes, ", "))
	}
	if !builtIn[u.Scheme] {
		return Location{}, fmt.Errorf("store URL %q: this jukebox was built without the %s:// driver; %s", masked(u), u.Scheme, notBuilt[u.Scheme])
	}
	if u.User != nil {
		return Location{}, fmt.Errorf("store URL %q: %s", masked(u), noCredentials)
	}
	loc := Location{Scheme: u.Scheme, shown: raw}
	var dir, name string
	if strings.HasSuffix(u.Path, TapeExt) {
		dir, name = path.Split(u.Path)
		if strings.TrimSuffix(name, TapeExt) == "" {
			return Location{}, fmt.Errorf("store URL %q: %q names no tape", raw, name)
		}
		loc.Name = name
	} else {
		dir = u.Path
	}
	if u.Scheme == "file" {
		// A folder is the bucket: the folder driver takes its path, and the store
		// has no prefix of its own.
		if u.Host != "" && u.Host != "localhost" {
			return Location{}, fmt.Errorf("store URL %q: a file URL names a local folder: file:///path/to/folder/", raw)
		}
		if u.Path == "" {
			return Location{}, fmt.Errorf("store URL %q: no folder (want file:///path/to/folder/)", raw)
		}
		b := url.URL{Scheme: "file", Path: path.Clean(dir), RawQuery: u.RawQuery}
		loc.bucket = b.String()
		return loc, nil
	}
	if u.Host == "" {
		return Location{}, fmt.Errorf("store URL %q: no bucket (want %s://BUCKET/PREFIX/)", raw, u.Scheme)
	}
	prefix := strings.Trim(dir, "/")
	if prefix != "" {
		prefix += "/"
	}
	if strings.Contains("/"+prefix, "/../") || strings.Contains("/"+prefix, "/./") {
		return Location{}, fmt.Errorf("store URL %q: the prefix %q has . or .. in it", raw, prefix)
	}
	loc.Prefix = prefix
	b := url.URL{Scheme: u.Scheme, Host: u.Host, RawQuery: u.RawQuery}
	loc.bucket = b.String()
	return loc, nil
}

// String is the URL as given.
func (l Location) String() string { return l.shown }

// Store is the location of the store that holds the tape l names (l itself
// for a store).
func (l Location) Store() Location {
	s := l
	s.Name = ""
	if l.Name != "" {
		s.shown = l.TapeURL("")
	}
	return s
}

// Sub is the store in the folder dir (a name ending in "/") of the store
// at l: a prefix below its prefix (a folder below its folder).
func (l Location) Sub(dir string) Location {
	s := l.Store()
	if s.Scheme == "file" {
		u, _ := url.Parse(s.bucket)
		u.Path = path.Join(u.Path, dir)
		s.bucket = u.String()
	} else {
		s.Prefix += dir
	}
	s.shown = s.TapeURL("")
	return s
}

// TapeURL is the URL of the tape name in the store at l (name "" gives the
// store's own URL).
func (l Location) TapeURL(name string) string {
	u, _ := url.Parse(l.bucket)
	if l.Scheme == "file" {
		u.Path = path.Join(u.Path, name)
		if name == "" {
			u.Path += "/"
		}
	} else {
		u.Path = "/" + l.Prefix + name
	}
	return u.String()
}

// masked is u without its user information and the values of its
// credential parameters, for a message.
func masked(u *url.URL) string {
	c := *u
	c.User = nil
	parts := strings.Split(c.RawQuery, "&")
	for i, p := range parts {
		k, v, _ := strings.Cut(p, "=")
		k, kerr := url.QueryUnescape(k)
		v, verr := url.QueryUnescape(v)
		if e, err := url.Parse(v); kerr != nil || verr != nil || credentialParam(k) || (err == nil && e.User != nil) {
			parts[i] = url.QueryEscape(k) + "=REDACTED"
		}
	}
	c.RawQuery = strings.Join(parts, "&")
	return c.String()
}

// noCredentials says where a store's credentials go.
const noCredentials = "credentials do not go in the URL, which is printed and kept in notes; set the store's environment variables (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY for S3)"

// credentialParam says whether a store URL's query parameter k names a
// credential (a key pasted into the URL), as the redaction rules name one:
// the URL is printed and kept in notes beside tapes, so such a URL is
// refused, and its value never shown. The drivers' own parameters that
// only look like one (the KMS key's id, the path of GCS's key file) are
// not credentials.
func credentialParam(k string) bool {
	switch strings.ToLower(k) {
	case "kmskeyid", "private_key_path":
		return false
	}
	return redact.SecretName(k)
}
