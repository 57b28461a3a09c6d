#!/usr/bin/env bash
# Build fake-gcs-server (a Google Cloud Storage emulator speaking its JSON
# API) from the tools module and print one line for the caller to eval:
#
#   eval "$(bash .ci/fakegcs.sh)"   # sets JUKEBOX_FAKEGCS
#
# The store tests (internal/gcstest) start it themselves on a free port.
exec bash "$(dirname "${BASH_SOURCE[0]}")/buildtool.sh" fake-gcs-server github.com/fsouza/fake-gcs-server JUKEBOX_FAKEGCS
