#!/usr/bin/env bash
# Build one program of the tools module (.ci/tools/go.mod, never the
# binary's module) into .cache/bin and print one line for the caller to
# eval, which exports its path:
#
#   eval "$(bash .ci/buildtool.sh NAME PACKAGE ENVVAR)"
#
# The version is the one .ci/tools/go.mod pins. Go's build cache makes a
# second run take seconds. Progress goes to stderr; stdout is only the
# export. $ENVVAR_BIN, when set, is where the program goes instead.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
name=$1 pkg=$2 var=$3
bin_var="${var}_BIN"
out=${!bin_var:-$PWD/.cache/bin/$name}
mkdir -p "$(dirname "$out")"
echo "$name: building $pkg from the tools module to $out" >&2
go -C .ci/tools build -o "$out" "$pkg" >&2
printf 'export %s=%q\n' "$var" "$out"
