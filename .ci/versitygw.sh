#!/usr/bin/env bash
# Build the Versity S3 Gateway (an S3-compatible server with a posix
# backend) from the tools module, never the binary's module, and print one
# line for the caller to eval:
#
#   eval "$(bash .ci/versitygw.sh)"   # sets JUKEBOX_VERSITYGW
#
# The store tests (internal/s3test) start it themselves on a free port over
# a temporary folder. The version is the one .ci/tools/go.mod pins. Go's
# build cache makes a second run take seconds; the first compiles it
# (a minute or two). Progress goes to stderr; stdout is only the export.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${JUKEBOX_VERSITYGW_BIN:-$PWD/.cache/bin/versitygw}
mkdir -p "$(dirname "$out")"
echo "versitygw.sh: building versitygw $(awk '$1 == "github.com/versity/versitygw" {print $2}' .ci/tools/go.mod) to $out" >&2
go -C .ci/tools build -o "$out" github.com/versity/versitygw/cmd/versitygw >&2
printf 'export JUKEBOX_VERSITYGW=%q\n' "$out"
