#!/usr/bin/env bash
# Builds the publishable `gadget-drone` npm package (apps/drone/scripts/build.mjs: one bundle, the
# workspace packages inlined) and packs it into a tarball that `npm install --global` takes.
# Usage: scripts/pack-drone.sh [output directory, default apps/drone/dist]
# `pnpm drone:pack` runs it; `npm install --global <tarball>` installs it, `npm publish <tarball>`
# releases it. (The drone image, docker/drone.Dockerfile, does the same two steps itself.)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mkdir -p "${1:-$root/apps/drone/dist}" && cd "${1:-$root/apps/drone/dist}" && pwd)"
pnpm --dir "$root" --filter gadget-drone build >&2
cd "$root/apps/drone/dist"
tarball="$(npm pack --silent --pack-destination "$out")"
echo "$out/$tarball"
