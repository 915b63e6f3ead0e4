#!/usr/bin/env bash
# Coverage-guided fuzzing of one target (docs/reliability.md "Fuzzing"):
#   tools/fuzz.sh TARGET [MINUTES] [--save]
# TARGET is one of tools/RavenLite.Fuzz/FuzzTargets.cs (rql, document, bulk-insert, bulk-docs, import, index, script,
# tcp, storage, restore). Publishes the fuzz program, instruments RavenLite's own assemblies with SharpFuzz, builds the libFuzzer
# bridge with clang and fuzzes from the target's seed corpus (tools/RavenLite.Fuzz/corpus/TARGET) for MINUTES (30 by
# default). Findings (the input that failed, the failure printed above it) land in $FUZZ_OUT/TARGET/findings; with
# --save the inputs that reached edges the seed corpus does not are merged into it (by edges alone, not hit counts,
# so the corpus CI replays stays small).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:?usage: tools/fuzz.sh TARGET [MINUTES] [--save]}"
minutes="${2:-30}"
save="${3:-}"
out="${FUZZ_OUT:-/tmp/ravenlite-fuzz}/$target"
seeds="tools/RavenLite.Fuzz/corpus/$target"
[ -d "$seeds" ] || { echo "no seed corpus $seeds" >&2; exit 2; }

# libFuzzer is Debian's clang runtime (libclang-rt-*-dev).
sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
clang=$(compgen -c clang- | grep -E '^clang-[0-9]+$' | sort -V | tail -1 || true)
if [ -z "$clang" ] || ! compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
  $sudo apt-get update && $sudo apt-get install -y clang libclang-rt-dev || $sudo apt-get install -y clang-14 libclang-rt-14-dev
  clang=$(compgen -c clang- | grep -E '^clang-[0-9]+$' | sort -V | tail -1)
fi

rm -rf "$out/app"
mkdir -p "$out/corpus" "$out/findings"
dotnet publish tools/RavenLite.Fuzz -c Release -o "$out/app" -p:BuildStudio=false --nologo -v quiet
dotnet tool restore >/dev/null
for assembly in RavenLite.Server.dll RavenLite.Storage.dll; do
  dotnet sharpfuzz "$out/app/$assembly"
done
"$clang" -O1 -fsanitize=fuzzer tools/RavenLite.Fuzz/bridge/bridge.c -o "$out/bridge"

child=(--child=dotnet "--child=$out/app/RavenLite.Fuzz.dll" "--child=$target")
# -timeout: an input running longer is a hang (a finding); -rss_limit_mb=0: the limit would count only the bridge.
"$out/bridge" -timeout=20 -max_len=65536 -rss_limit_mb=0 -max_total_time=$((minutes * 60)) -print_final_stats=1 \
  -artifact_prefix="$out/findings/" "$out/corpus" "$seeds" "${child[@]}" 2>&1 | tee "$out/log.txt"
if [ "$save" = "--save" ]; then
  FUZZ_EDGES_ONLY=1 "$out/bridge" -merge=1 -artifact_prefix="$out/findings/" -timeout=20 -max_len=65536 -rss_limit_mb=0 "$seeds" "$out/corpus" "${child[@]}" 2>&1 | tail -3
fi
