#!/usr/bin/env bash
# Builds the `gadget-drone` package (apps/drone/scripts/build.mjs: one self-contained bundle) and
# packs it into gadget-drone-<version>.tgz, which the server hands out (/install.sh,
# `gadget-drone update`) and `npm install --global` takes as well.
# Usage: scripts/pack-drone.sh [output directory, default apps/drone/dist]
# GADGET_DRONE_VERSION=<v> packs another version number (tests of updates).
# `pnpm drone:pack` runs it; the server runs it at start when its cached package is stale.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mkdir -p "${1:-$root/apps/drone/dist}" && cd "${1:-$root/apps/drone/dist}" && pwd)"
staging="$(mktemp -d "${TMPDIR:-/tmp}/gadget-drone-pack.XXXXXX")"
trap 'rm -rf "$staging"' EXIT
node "$root/apps/drone/scripts/build.mjs" "$staging/package" \
  ${GADGET_DRONE_VERSION:+--version "$GADGET_DRONE_VERSION"} >&2
version="$(node -p 'require(process.argv[1]).version' "$staging/package/package.json")"
# A tarball like npm pack's (package/ inside), with fixed owners and times so a rebuild of the
# same code hashes the same.
if tar --version 2>/dev/null | grep -q GNU; then
  tar -C "$staging" --sort=name --owner=0 --group=0 --numeric-owner --mtime='2000-01-01 00:00Z' \
    -cf - package | gzip -n >"$staging/gadget-drone-$version.tgz"
else
  tar -C "$staging" -cf - package | gzip -n >"$staging/gadget-drone-$version.tgz"
fi
mv "$staging/gadget-drone-$version.tgz" "$out/gadget-drone-$version.tgz"
echo "$out/gadget-drone-$version.tgz"
