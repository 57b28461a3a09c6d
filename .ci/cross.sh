#!/usr/bin/env bash
# Type-checks the main module and bench/, tests included, for the
# platforms docs/platforms.md names, so code that only builds on Linux is
# caught here. One line per target; exits 1 after all targets if any
# failed, with the errors.
#
# The check is .ci/tools/typecheck: go/types over every package and what
# it imports, from source, for that GOOS and GOARCH. It finds what go
# build would refuse there without compiling: compiling instead took a
# cold build cache seven minutes a system (the standard library and every
# dependency once more), against 15 seconds. go vet runs on Linux only
# (.ci/test), over the same code.
#
# By default one architecture per system (darwin/arm64, windows/amd64):
# nothing in the code depends on the architecture. `bash .ci/cross.sh
# all` checks all four.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

eval "$(bash .ci/buildtool.sh typecheck ./typecheck JUKEBOX_TYPECHECK 2>/dev/null)" || {
	echo "cross: FAILED to build .ci/tools/typecheck"
	bash .ci/buildtool.sh typecheck ./typecheck JUKEBOX_TYPECHECK 2>&1 | sed 's/^/    /'
	exit 1
}
failed=0
check() { # label, then typecheck's arguments; GOOS and GOARCH from the caller
	local label=$1 start=$SECONDS out
	shift
	if out=$("$JUKEBOX_TYPECHECK" "$@" 2>&1); then
		echo "cross: $label: ok ($((SECONDS - start))s)"
	else
		echo "cross: $label: FAILED ($((SECONDS - start))s)"
		echo "$out" | sed 's/^/    /'
		failed=1
	fi
}
targets="darwin/arm64 windows/amd64"
[ "${1:-}" = all ] && targets="darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"
for target in $targets; do
	export GOOS=${target%/*} GOARCH=${target#*/}
	check "$target: the module" ./...
	check "$target: bench" -C bench ./...
done
unset GOOS GOARCH
# The store drivers' build tags (tapestore/drivers_*.go): folders only
# (jukebox_nos3), for this system. Every driver (jukebox_gcs,jukebox_azure)
# needs no check here: .ci/test compiles the store and the CLI with those
# tags, with the tagged tests that use the GCS and Azure emulators.
check "-tags jukebox_nos3: the store and the CLI" -tags jukebox_nos3 ./tapestore ./cmd/jukebox
exit $failed
