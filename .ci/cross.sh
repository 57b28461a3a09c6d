#!/usr/bin/env bash
# Cross-compiles the main module for the platforms docs/platforms.md
# names and vets it and bench/ there (go vet type-checks the tests
# too), so code that only builds on Linux is caught here. One line per
# target; exits 1 after all targets if any failed, with the output.
#
# By default one architecture per system (darwin/arm64, windows/amd64):
# nothing in the code depends on the architecture, and each target costs a
# cold build cache minutes of compiling the standard library and every
# dependency again. `bash .ci/cross.sh all` checks all four.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

failed=0
targets="darwin/arm64 windows/amd64"
[ "${1:-}" = all ] && targets="darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"
for target in $targets; do
	start=$SECONDS
	if out=$(export GOOS=${target%/*} GOARCH=${target#*/}
		go build ./... 2>&1 && go vet ./... 2>&1 && go -C bench vet ./... 2>&1); then
		echo "cross: $target: go build, go vet and bench's go vet ok ($((SECONDS - start))s)"
	else
		echo "cross: $target: FAILED ($((SECONDS - start))s)"
		echo "$out" | sed 's/^/    /'
		failed=1
	fi
done
# The store drivers' build tags (tapestore/drivers_*.go): folders only
# (jukebox_nos3), and every driver with the tagged tests that use the GCS
# and Azure emulators (jukebox_gcs,jukebox_azure), for this system.
for tags in jukebox_nos3 jukebox_gcs,jukebox_azure; do
	start=$SECONDS
	if out=$(go vet -tags "$tags" ./tapestore ./cmd/jukebox ./internal/gcstest ./internal/azuretest 2>&1); then
		echo "cross: -tags $tags: go vet of the store and the CLI ok ($((SECONDS - start))s)"
	else
		echo "cross: -tags $tags: FAILED ($((SECONDS - start))s)"
		echo "$out" | sed 's/^/    /'
		failed=1
	fi
done
exit $failed
