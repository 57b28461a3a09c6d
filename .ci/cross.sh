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
# The store drivers each cloud's build tag leaves out (tapestore/drivers_*.go):
# the binary must build without any of them.
start=$SECONDS
if out=$(go vet -tags jukebox_nos3,jukebox_nogcs,jukebox_noazure ./tapestore 2>&1); then
	echo "cross: without the cloud store drivers (jukebox_nos3,jukebox_nogcs,jukebox_noazure): go vet ok ($((SECONDS - start))s)"
else
	echo "cross: without the cloud store drivers: FAILED ($((SECONDS - start))s)"
	echo "$out" | sed 's/^/    /'
	failed=1
fi
exit $failed
