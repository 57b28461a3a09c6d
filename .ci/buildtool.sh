#!/usr/bin/env bash
# Build one program of the tools module (.ci/tools/go.mod, never the
# binary's module) and print one line for the caller to eval, which
# exports its path:
#
#   eval "$(bash .ci/buildtool.sh NAME PACKAGE ENVVAR)"
#
# The version is the one .ci/tools/go.mod pins. The program goes to the
# user's cache (jukebox-tests/bin/KEY/NAME), KEY a hash of what the build
# depends on: the Go toolchain and its settings, the tools module's
# go.mod and go.sum, and a local package's files. A later run, from any
# clone, finds it there and builds nothing (a fresh clone used to link
# the four test servers again: 33 s of CPU). A cached program is touched
# when used; others of the same name unused for 30 days, and builds cut
# short a day ago, are removed. Progress goes to stderr;
# stdout is only the export. $ENVVAR_BIN, when set, is where the program
# goes instead (always built then).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
name=$1 pkg=$2 var=$3
bin_var="${var}_BIN"
out=${!bin_var:-} build=1
if [ -z "$out" ]; then
	key=$({
		go env GOVERSION GOOS GOARCH GOAMD64 CGO_ENABLED CC CXX GOFLAGS
		cat .ci/tools/go.mod .ci/tools/go.sum
		case $pkg in ./*) find ".ci/tools/${pkg#./}" -type f | LC_ALL=C sort | xargs sha256sum ;; esac
	} | sha256sum | cut -c1-16)
	out=${XDG_CACHE_HOME:-$HOME/.cache}/jukebox-tests/bin/$key/$name
	[ -x "$out" ] && build=0
fi
if [ "$build" = 1 ]; then
	mkdir -p "$(dirname "$out")"
	echo "$name: building $pkg from the tools module to $out" >&2
	# Built beside and renamed into place: a build cut short leaves no
	# program at $out for the next run to trust.
	go -C .ci/tools build -o "$out.tmp.$$" "$pkg" >&2
	mv -f "$out.tmp.$$" "$out"
else
	echo "$name: $out (built earlier from the same sources)" >&2
	touch "$out"
fi
if [ -z "${!bin_var:-}" ]; then
	cache=$(dirname "$(dirname "$out")")
	find "$cache" -mindepth 2 -maxdepth 2 \( -name "$name" -mtime +30 -o -name "$name.tmp.*" -mtime +0 \) \
		! -path "$out" -delete 2>/dev/null || true
	find "$cache" -mindepth 1 -maxdepth 1 -type d -empty -delete 2>/dev/null || true
fi
printf 'export %s=%q\n' "$var" "$out"
