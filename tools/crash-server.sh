#!/usr/bin/env bash
# Long run of the server crash test (docs/reliability.md R1): SIGKILL the server process during bulk
# inserts and concurrent PUTs, restart, audit. Usage: tools/crash-server.sh [rounds, default 50] [seed]
set -euo pipefail
cd "$(dirname "$0")/.."
export RAVENLITE_CRASH_ROUNDS="${1:-50}"
[ -n "${2:-}" ] && export RAVENLITE_TEST_SEED="$2"
dotnet test tests/RavenLite.Server.Tests -c Release --filter ServerCrashTests --logger "console;verbosity=detailed"
