#!/usr/bin/env bash
# Runs every test. Installs the native libraries the project needs when they are missing
# (Debian/Ubuntu): liblz4-1 is the LZ4 codec the storage engine calls (required); liblmdb0 is the
# storage benchmark's peer, installed here so the README's second command works on a fresh
# machine (optional: the tests do not need it). See docs/dependencies.md.
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

dotnet test RavenLite.sln -c Release "$@"
