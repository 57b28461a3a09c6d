#!/usr/bin/env bash
# Build Jaeger v2 (all-in-one, built on the OpenTelemetry Collector) from
# the tools module, never the binary's module, and print one line for the
# caller to eval:
#
#   eval "$(bash .ci/jaeger.sh)"   # sets JUKEBOX_JAEGER
#
# The export tests (export/jaeger_test.go, cmd/jukebox's live export tests)
# start it themselves on free ports with export/testdata/jaeger.yaml. The
# version is the one .ci/tools/go.mod pins. Go's build cache makes a second
# run take seconds; the first compiles the Collector and Jaeger (minutes).
# Progress goes to stderr; stdout is only the export.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${JUKEBOX_JAEGER_BIN:-$PWD/.cache/bin/jaeger}
mkdir -p "$(dirname "$out")"
echo "jaeger.sh: building jaeger $(awk '$1 == "github.com/jaegertracing/jaeger" {print $2}' .ci/tools/go.mod) to $out" >&2
go -C .ci/tools build -o "$out" github.com/jaegertracing/jaeger/cmd/jaeger >&2
printf 'export JUKEBOX_JAEGER=%q\n' "$out"
