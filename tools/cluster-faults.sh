#!/usr/bin/env bash
# Long run of the cluster's fault tests (docs/cluster.md "Failure model"): each cycle runs, with fresh processes and data
# directories, the leader's SIGKILL under compare-exchange puts and identities, the preferred node's SIGKILL under
# 8 writers with write assurance, a member's SIGSTOP beyond the rehab delay, the minority side of a partition, and
# the linearizability history across a SIGSTOP and a SIGKILL (with its broken variant), an ongoing task's node stopped
# (the task moves), a subscription's node killed (its worker moves), and a mentor stopped while it should feed a
# promotable. The suite runs each once (the short CI variant); this repeats them. Usage: tools/cluster-faults.sh [cycles, default 50]. Exits non-zero when any
# cycle failed, after all cycles, with the failed cycles' logs kept in $TMPDIR.
set -uo pipefail
cd "$(dirname "$0")/.."
cycles="${1:-50}"
filter="FullyQualifiedName~ClusterTests.Compare_exchange_puts_and_identities_acknowledged_while_the_leader_is_killed"
filter+="|FullyQualifiedName~ClusterTests.Writes_acknowledged_with_one_replica_survive_the_kill"
filter+="|FullyQualifiedName~ClusterTests.A_member_stopped_beyond_the_rehab_delay"
filter+="|FullyQualifiedName~ClusterTests.The_minority_side_refuses"
filter+="|FullyQualifiedName~ClusterTests.Compare_exchange_histories_through_every_node"
filter+="|FullyQualifiedName~ClusterTests.Reads_without_the_read_barrier"
filter+="|FullyQualifiedName~ClusterTaskTests"
filter+="|FullyQualifiedName~DatabaseGroupTests.A_promotable_is_fed_by_its_mentor_alone"
dotnet build tests/RavenLite.Server.Tests -c Release >/dev/null || exit 2
failed=0
start=$(date +%s)
for ((i = 1; i <= cycles; i++)); do
  log="${TMPDIR:-/tmp}/cluster-faults-cycle-$i.log"
  if dotnet test tests/RavenLite.Server.Tests -c Release --no-build --filter "$filter" >"$log" 2>&1; then
    rm -f "$log"
    echo "cycle $i/$cycles: passed ($(( $(date +%s) - start )) s so far)"
  else
    failed=$((failed + 1))
    echo "cycle $i/$cycles: FAILED (log kept: $log)"
  fi
done
echo "$((cycles - failed))/$cycles cycles passed in $(( $(date +%s) - start )) s"
[ "$failed" -eq 0 ]
