#!/usr/bin/env bash
# Runs every test. Installs the native libraries the project needs when they are missing
# (Debian/Ubuntu): liblz4-1 is the LZ4 codec the storage engine calls (required); liblmdb0 is the
# storage benchmark's peer, installed here so the README's second command works on a fresh
# machine (optional: the tests do not need it). Node.js + npm run RavenDB's official Node client
# against the server (tests/node-client) and build the Studio; Chromium runs the Studio's
# end-to-end test. See docs/dependencies.md.
set -euo pipefail
cd "$(dirname "$0")"

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
updated=""
install() {
  [ -n "$updated" ] || { $sudo apt-get update; updated=1; }
  $sudo apt-get install -y "$@"
}

ldconfig -p | grep -q 'liblz4\.so\.1' || install liblz4-1
ldconfig -p | grep -q 'liblmdb\.so\.0' || install liblmdb0 || echo "warning: could not install liblmdb0; benchmarks against LMDB will not run (tests do not need it)" >&2

# RavenDB's official Node client for the compatibility test (tests/node-client, pinned by package-lock.json).
command -v node >/dev/null || install nodejs npm
npm ci --prefix tests/node-client --no-audit --no-fund

# The Studio's end-to-end test drives Debian's Chromium (never a downloaded browser build). The Studio itself
# (npm ci + Vite build) is built by Server.csproj.
[ -x /usr/bin/chromium ] || install chromium

dotnet test RavenLite.sln -c Release "$@"
