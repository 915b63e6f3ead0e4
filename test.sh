#!/usr/bin/env bash
# Runs every test. Installs what the tests and tools need when it is missing (Debian/Ubuntu):
# liblmdb0 and liblz4-1 are benchmark peers (LMDB for the storage suite, the reference LZ4 codec for
# the micro-benchmarks), installed here so the tools work on a fresh machine (optional: the tests
# do not need them; the engine's LZ4 is K4os.Compression.LZ4, managed code). PostgreSQL is the SQL ETL tests'
# destination. Node.js + npm run RavenDB's official Node client
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

ldconfig -p | grep -q 'liblmdb\.so\.0' || install liblmdb0 || echo "warning: could not install liblmdb0; benchmarks against LMDB will not run (tests do not need it)" >&2
ldconfig -p | grep -q 'liblz4\.so\.1' || install liblz4-1 || echo "warning: could not install liblz4-1; the LZ4 micro-benchmark's peer will not run (tests do not need it)" >&2

# RavenDB's official Node client for the compatibility test (tests/node-client, pinned by package-lock.json).
command -v node >/dev/null || install nodejs npm
npm ci --prefix tests/node-client --no-audit --no-fund

# The SQL ETL tests load into a PostgreSQL they start themselves (Debian's package: initdb on a temp dir, loopback);
# the benchmarks use it as a peer.
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || install postgresql

# The Studio's end-to-end test drives Debian's Chromium (never a downloaded browser build). The Studio itself
# (npm ci + Vite build) is built by Server.csproj.
[ -x /usr/bin/chromium ] || install chromium

dotnet test RavenLite.sln -c Release "$@"
