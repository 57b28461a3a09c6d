#!/usr/bin/env bash
# Build programs of the tools module (.ci/tools/go.mod, never the
# binary's module) and print one line for each for the caller to eval,
# which exports its path:
#
#   eval "$(bash .ci/buildtool.sh NAME PACKAGE ENVVAR [NAME PACKAGE ENVVAR]...)"
#
# The version is the one .ci/tools/go.mod pins. A program goes to the
# user's cache (jukebox-tests/bin/KEY/NAME), KEY a hash of what the build
# depends on: the Go toolchain and its settings, the tools module's
# go.mod and go.sum, and a local package's files. A later run, from any
# clone, finds it there and builds nothing (a fresh clone used to link
# the four test servers again: 33 s of CPU). The programs not found are
# built by one go build, so that what they share (the standard library,
# gRPC, the cloud SDKs) is compiled once: four builds at once on a cold
# cache each compiled it (the build cache does not share work in
# progress between processes). A cached program is touched when used;
# others of the same name unused for 30 days, and builds cut short a day
# ago, are removed. Progress goes to stderr; stdout is only the exports.
# $ENVVAR_BIN, when set, is where the program goes instead (always built
# then).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if (($# == 0 || $# % 3 != 0)); then
	echo "usage: buildtool.sh NAME PACKAGE ENVVAR [NAME PACKAGE ENVVAR]..." >&2
	exit 2
fi
toolchain=$(go env GOVERSION GOOS GOARCH GOAMD64 CGO_ENABLED CC CXX GOFLAGS)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/jukebox-tests/bin
names=() outs=() vars=() pkgs=() build=() built_idx=()
while (($#)); do
	name=$1 pkg=$2 var=$3
	shift 3
	bin_var="${var}_BIN"
	out=${!bin_var:-}
	if [ -z "$out" ]; then
		key=$({
			echo "$toolchain"
			cat .ci/tools/go.mod .ci/tools/go.sum
			case $pkg in ./*) find ".ci/tools/${pkg#./}" -type f | LC_ALL=C sort | xargs sha256sum ;; esac
		} | sha256sum | cut -c1-16)
		out=$cache/$key/$name
	fi
	if [ -n "${!bin_var:-}" ] || [ ! -x "$out" ]; then
		build+=("$pkg") built_idx+=("${#names[@]}")
		echo "$name: building $pkg from the tools module to $out" >&2
	else
		echo "$name: $out (built earlier from the same sources)" >&2
		touch "$out"
	fi
	names+=("$name") outs+=("$out") vars+=("$var") pkgs+=("$pkg")
done
if ((${#build[@]})); then
	# Built into a folder beside and renamed into place: a build cut
	# short leaves no program at its path for the next run to trust.
	mkdir -p "$cache"
	tmp=$(mktemp -d "$cache/build.tmp.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	# go build -o DIR/ names each program after its package's last
	# element.
	go -C .ci/tools build -o "$tmp/" "${build[@]}" >&2
	for i in "${built_idx[@]}"; do
		mkdir -p "$(dirname "${outs[$i]}")"
		mv -f "$tmp/$(basename "${pkgs[$i]}")" "${outs[$i]}"
	done
fi
for i in "${!names[@]}"; do
	bin_var="${vars[$i]}_BIN"
	if [ -z "${!bin_var:-}" ]; then
		find "$cache" -mindepth 2 -maxdepth 2 -name "${names[$i]}" -mtime +30 ! -path "${outs[$i]}" -delete 2>/dev/null || true
	fi
	printf 'export %s=%q\n' "${vars[$i]}" "${outs[$i]}"
done
find "$cache" -mindepth 1 -maxdepth 1 -name 'build.tmp.*' -mtime +0 -exec rm -rf {} + 2>/dev/null || true
find "$cache" -mindepth 1 -maxdepth 1 -type d -empty -delete 2>/dev/null || true
