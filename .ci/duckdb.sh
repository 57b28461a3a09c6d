#!/usr/bin/env bash
# Build duckq (.ci/tools/duckq: SQL through DuckDB's Go bindings, printed
# as JSON) from the tools module and print one line for the caller to
# eval:
#
#   eval "$(bash .ci/duckdb.sh)"   # sets JUKEBOX_DUCKQ
#
# The Parquet export tests query what `jukebox export parquet` wrote with
# it, as a user's DuckDB would. DuckDB is cgo and C++: it needs gcc and
# g++, and it stays out of the jukebox binary.
exec bash "$(dirname "${BASH_SOURCE[0]}")/buildtool.sh" duckq ./duckq JUKEBOX_DUCKQ
