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

echo "setup-node: installing testdata/agents/node_modules (npm ci)"
(cd "$agents" && npm ci --no-audit --no-fund)
