#!/usr/bin/env bash
# Build the Versity S3 Gateway (an S3-compatible server with a posix
# backend) from the tools module and print one line for the caller to eval:
#
#   eval "$(bash .ci/versitygw.sh)"   # sets JUKEBOX_VERSITYGW
#
# The store tests (internal/s3test) start it themselves on a free port
# over a temporary folder.
exec bash "$(dirname "${BASH_SOURCE[0]}")/buildtool.sh" versitygw github.com/versity/versitygw/cmd/versitygw JUKEBOX_VERSITYGW
