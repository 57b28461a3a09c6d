#!/usr/bin/env bash
# Installs the real-SDK test agents' npm packages (testdata/agents) with
# `npm ci`, when node_modules is missing or older than package-lock.json.
# Idempotent: a second run with nothing changed does nothing.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
agents="$root/testdata/agents"

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "setup-node: '$tool' is not installed; the SDK agent tests need Node.js 20+ and npm" >&2
    echo "setup-node: (or set JUKEBOX_SKIP_SDK=1 to skip those tests)" >&2
    exit 1
  fi
done

# The official build of Node.js 22, which the tests run (and npm ci below
# runs under): the npm registry carries the Node.js project's release binaries as
# node-linux-<arch> packages. It starts an SDK agent on about two thirds
# of the CPU Debian's Node 20 takes (the tests start over a hundred), and
# keeps compiled code between starts (NODE_COMPILE_CACHE). Kept in the
# user's cache under its version; with an argument FILE, the folder to
# put first on PATH is written there as node_bin=DIR (nothing where the
# build cannot be had: the Node.js on PATH runs the tests then).
node_release=22.23.5
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/jukebox-tests"
case "$(uname -m)" in
x86_64 | amd64) node_arch=x64 ;;
aarch64 | arm64) node_arch=arm64 ;;
*) node_arch= ;;
esac
if [ -n "$node_arch" ]; then
  node_home="$cache_root/node-$node_release-linux-$node_arch"
  if [ ! -x "$node_home/bin/node" ]; then
    echo "setup-node: fetching Node.js $node_release (npm package node-linux-$node_arch)"
    # A cache that cannot be written leaves the tests to the Node.js on PATH.
    tmp=
    if mkdir -p "$cache_root" 2>/dev/null && tmp="$(mktemp -d "$cache_root/.node-XXXXXX" 2>/dev/null)" &&
      (cd "$tmp" && npm pack --silent "node-linux-$node_arch@$node_release" >/dev/null && tar xzf node-linux-*.tgz) &&
      "$tmp/package/bin/node" --version >/dev/null && { mv -T "$tmp/package" "$node_home" 2>/dev/null || [ -x "$node_home/bin/node" ]; }; then
      find "$cache_root" -maxdepth 1 -name 'node-*-linux-*' ! -name "node-$node_release-linux-$node_arch" -exec rm -rf {} + 2>/dev/null || true
    else
      echo "setup-node: Node.js $node_release could not be had; the tests run with $(node --version) from PATH" >&2
    fi
    [ -z "$tmp" ] || rm -rf "$tmp"
  fi
  if [ -x "$node_home/bin/node" ]; then
    PATH="$node_home/bin:$PATH"
    if [ $# -gt 0 ]; then echo "node_bin=$node_home/bin" >"$1"; fi
  fi
fi
echo "setup-node: $(command -v node) $(node --version)"

major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 20 ]; then
  echo "setup-node: Node.js $(node --version) is too old; the SDK agents need 20 or newer" >&2
  exit 1
fi

stamp="$agents/node_modules/.package-lock.json"
if [ -f "$stamp" ] && [ ! "$agents/package-lock.json" -nt "$stamp" ] && [ ! "$agents/package.json" -nt "$stamp" ]; then
  echo "setup-node: testdata/agents/node_modules is up to date"
  exit 0
fi

# A clean clone has no node_modules. An install is kept in the user's cache
# under the hash of the lock file and Node's major version, and a later
# clone links its files from there (cp -al, seconds) where `npm ci` takes a
# minute or more; a cache on another file system is copied instead.
# copy_tree SRC DST: hard links where both are on one file system, a copy
# otherwise.
copy_tree() {
  cp -al "$1" "$2" 2>/dev/null || { rm -rf "$2"; cp -a "$1" "$2"; }
}
key="$(cat "$agents/package-lock.json" "$agents/package.json" | sha256sum | cut -c1-16)-node$major"
cached="$cache_root/node_modules-$key"
rm -rf "$agents/node_modules"
if [ -f "$cached/.complete" ]; then
  echo "setup-node: testdata/agents/node_modules from the cache (lock file $key)"
  if copy_tree "$cached/node_modules" "$agents/node_modules"; then
    touch "$stamp"
    exit 0
  fi
  echo "setup-node: the cache could not be copied; installing" >&2
  rm -rf "$agents/node_modules"
fi

echo "setup-node: installing testdata/agents/node_modules (npm ci)"
(cd "$agents" && npm ci --no-audit --no-fund)
# Kept for the next clone; a failure to keep it fails nothing.
if mkdir -p "$cache_root" 2>/dev/null; then
  tmp="$(mktemp -d "$cache_root/.node_modules-XXXXXX")"
  if copy_tree "$agents/node_modules" "$tmp/node_modules" && touch "$tmp/.complete" && rm -rf "$cached" && mv "$tmp" "$cached"; then
    echo "setup-node: kept in the cache (lock file $key)"
  else
    rm -rf "$tmp"
  fi
  # Older installs (another lock file) are removed.
  find "$cache_root" -maxdepth 1 -name 'node_modules-*' ! -name "node_modules-$key" -exec rm -rf {} + 2>/dev/null || true
fi
