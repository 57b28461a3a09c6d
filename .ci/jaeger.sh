#!/usr/bin/env bash
# Build Jaeger v2 (all-in-one, built on the OpenTelemetry Collector) from
# the tools module and print one line for the caller to eval:
#
#   eval "$(bash .ci/jaeger.sh)"   # sets JUKEBOX_JAEGER
#
# The export tests (export/jaeger_test.go, cmd/jukebox's live export tests)
# start it themselves on free ports with export/testdata/jaeger.yaml. The
# first build compiles the Collector and Jaeger (minutes).
exec bash "$(dirname "${BASH_SOURCE[0]}")/buildtool.sh" jaeger github.com/jaegertracing/jaeger/cmd/jaeger JUKEBOX_JAEGER
