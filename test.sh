#!/usr/bin/env bash
# Runs every test. Installs the native libraries the project needs when they are missing
# (Debian/Ubuntu: liblz4-1 is the LZ4 codec the storage engine calls; liblmdb0 is the storage
# benchmark's peer, installed here so the README's second command works on a fresh machine;
# see docs/dependencies.md).
set -euo pipefail
cd "$(dirname "$0")"

need=()
ldconfig -p | grep -q 'liblz4\.so\.1' || need+=(liblz4-1)
ldconfig -p | grep -q 'liblmdb\.so\.0' || need+=(liblmdb0)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update
  $sudo apt-get install -y "${need[@]}"
fi

dotnet test RavenLite.sln -c Release "$@"
