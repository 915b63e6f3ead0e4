#!/usr/bin/env bash
# The deploy check (issue 24): builds the RavenLite image in a real Docker engine on this machine and checks it.
# From a clean Debian machine: installs docker.io, debootstrap and docker-compose, starts dockerd without a bridge
# or iptables (every container runs with host networking, so all traffic stays on 127.0.0.1), makes a local Debian
# base image with debootstrap (no registry can be reached), a runtime base from it with the machine's .NET runtime,
# publishes the server (Studio included) and builds ./Dockerfile with PREBUILT. Then checks:
#   the image builds (size reported); the container becomes healthy; it runs as a non-root uid;
#   documents written over HTTP survive `docker stop` + a new container on the same volume;
#   `docker kill` (SIGKILL) while a writer runs loses no acknowledged write;
#   SIGTERM shutdown is clean (exit code 0, the log line) within 10 s;
#   `docker-compose config` accepts the compose file and `up -d` with the host-network override brings a healthy
#   server, `down` stops it;
#   docker-compose.cluster.yml brings three healthy nodes that form a cluster through the HTTP API, take a database
#   with replication factor 3, and replicate a document written through one node to another.
# Usage: tests/deploy/run.sh        (about 3-6 minutes the first time, most of it debootstrap)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
WORK=${RAVENLITE_DEPLOY_WORK:-/tmp/ravenlite-deploy}
PORT=18080
IMAGE=ravenlite:deploy-test
VOLUME=ravenlite-deploy-test-data
say() { printf '\n== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }
sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"

say "prerequisites"
need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v docker-compose >/dev/null || need+=(docker-compose)
if [ ${#need[@]} -gt 0 ]; then $sudo apt-get update && $sudo apt-get install -y "${need[@]}"; fi
if ! docker info >/dev/null 2>&1; then
  $sudo sh -c 'dockerd --bridge=none --iptables=false >/tmp/ravenlite-dockerd.log 2>&1 &'
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || fail "dockerd did not start (see /tmp/ravenlite-dockerd.log)"
fi
docker version --format 'docker client {{.Client.Version}}, engine {{.Server.Version}}'

mkdir -p "$WORK"
if ! docker image inspect local/debian:bookworm >/dev/null 2>&1; then
  say "local base image (debootstrap --variant=minbase bookworm)"
  rm -rf "$WORK/rootfs"
  $sudo debootstrap --variant=minbase bookworm "$WORK/rootfs" >"$WORK/debootstrap.log" 2>&1 || fail "debootstrap failed (see $WORK/debootstrap.log)"
  $sudo tar -C "$WORK/rootfs" -c . | docker import - local/debian:bookworm
fi

say "runtime base: local/debian:bookworm + ICU, OpenSSL + this machine's .NET runtime"
DOTNET_HOME=$(dirname "$(readlink -f "$(command -v dotnet)")")
rm -rf "$WORK/runtime" && mkdir -p "$WORK/runtime/dotnet/shared"
cp -a "$DOTNET_HOME/dotnet" "$DOTNET_HOME/host" "$WORK/runtime/dotnet/"
for fx in Microsoft.NETCore.App Microsoft.AspNetCore.App; do
  version=$(ls "$DOTNET_HOME/shared/$fx" | sort -V | tail -1)
  mkdir -p "$WORK/runtime/dotnet/shared/$fx" && cp -a "$DOTNET_HOME/shared/$fx/$version" "$WORK/runtime/dotnet/shared/$fx/"
done
cat >"$WORK/runtime/Dockerfile" <<'DOCKERFILE'
FROM local/debian:bookworm
RUN apt-get update && apt-get install -y --no-install-recommends libicu72 libssl3 ca-certificates && rm -rf /var/lib/apt/lists/*
COPY dotnet /usr/share/dotnet
RUN ln -s /usr/share/dotnet/dotnet /usr/bin/dotnet && dotnet --list-runtimes
DOCKERFILE
docker build -q --network host -t local/ravenlite-runtime:10.0 "$WORK/runtime" >/dev/null

say "publish (Studio included) and docker build"
rm -rf tests/deploy/out
dotnet publish Server/RavenLite.Server.csproj -c Release --use-current-runtime --self-contained false -p:PublishReadyToRun=true -o tests/deploy/out/app -v quiet -nologo >/dev/null
test -f tests/deploy/out/app/studio/index.html || fail "the publish has no Studio"
start=$(date +%s)
docker build --network host -t "$IMAGE" \
  --build-arg NODE_IMAGE=local/debian:bookworm --build-arg SDK_IMAGE=local/ravenlite-runtime:10.0 \
  --build-arg RUNTIME_IMAGE=local/ravenlite-runtime:10.0 --build-arg PREBUILT=tests/deploy/out/app . >"$WORK/build.log" 2>&1 \
  || { tail -30 "$WORK/build.log"; fail "docker build failed"; }
echo "image built in $(( $(date +%s) - start )) s; size $(docker image inspect "$IMAGE" --format '{{.Size}}' | awk '{printf "%.1f MB", $1/1048576}') (runtime base $(docker image inspect local/ravenlite-runtime:10.0 --format '{{.Size}}' | awk '{printf "%.1f MB", $1/1048576}'))"

cleanup() {
  docker rm -f ravenlite-deploy-a ravenlite-deploy-b ravenlite-deploy-c ravenlite-deploy-d >/dev/null 2>&1 || true
  docker-compose -p ravenlite-deploy -f docker-compose.yml -f tests/deploy/docker-compose.host.yml down -v >/dev/null 2>&1 || true
  docker-compose -p ravenlite-cluster -f docker-compose.cluster.yml down -v >/dev/null 2>&1 || true
  docker volume rm -f "$VOLUME" >/dev/null 2>&1 || true
  # The legacy builder keeps each stage's image: drop the untagged ones of this build.
  docker image prune -f --filter "label=org.opencontainers.image.title=ravenlite" >/dev/null 2>&1 || true
}
trap cleanup EXIT
cleanup

run() { # name: a container on the test volume, listening on 127.0.0.1:$PORT (host network)
  docker run -d --name "$1" --network host -v "$VOLUME:/var/lib/ravenlite" -e RAVENLITE_ServerUrl="http://127.0.0.1:$PORT" "$IMAGE" >/dev/null
}
healthy() { # name [seconds]
  for _ in $(seq 1 "${2:-90}"); do
    status=$(docker inspect "$1" --format '{{.State.Health.Status}}')
    [ "$status" = healthy ] && return 0
    [ "$(docker inspect "$1" --format '{{.State.Running}}')" = true ] || { docker logs "$1" | tail -20; fail "$1 exited"; }
    sleep 1
  done
  docker logs "$1" | tail -20; fail "$1 did not become healthy (status: $status)"
}
url="http://127.0.0.1:$PORT"

say "container: healthy, non-root"
run ravenlite-deploy-a
healthy ravenlite-deploy-a
uid=$(docker exec ravenlite-deploy-a id -u)
[ "$uid" != 0 ] || fail "the server runs as root"
echo "healthy; runs as uid $uid; /healthz: $(curl -s "$url/healthz"); /readyz: $(curl -s "$url/readyz")"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Accept: text/html' "$url/studio/")" = 200 ] || fail "the Studio is not served"

say "documents survive docker stop + a new container; SIGTERM is clean within 10 s"
curl -sf -X PUT "$url/admin/databases?name=shop" -d '{}' >/dev/null
for i in $(seq 1 100); do curl -sf -X PUT "$url/databases/shop/docs?id=items/$i" -d "{\"N\":$i,\"@metadata\":{\"@collection\":\"Items\"}}" >/dev/null; done
start=$(date +%s%N)
docker stop ravenlite-deploy-a >/dev/null
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
code=$(docker inspect ravenlite-deploy-a --format '{{.State.ExitCode}}')
docker logs ravenlite-deploy-a 2>&1 | grep -q "RavenLite stopped cleanly" || { docker logs ravenlite-deploy-a | tail; fail "no clean-shutdown log line"; }
[ "$code" = 0 ] || fail "exit code $code after SIGTERM"
[ "$elapsed_ms" -lt 10000 ] || fail "docker stop took ${elapsed_ms} ms"
echo "docker stop: exit code $code in $elapsed_ms ms; log: $(docker logs ravenlite-deploy-a 2>&1 | grep 'stopped cleanly' | sed 's/^.*info: //')"
run ravenlite-deploy-b
healthy ravenlite-deploy-b
count=$(curl -sf "$url/databases/shop/collections/stats" | sed -n 's/.*"Items":\([0-9]*\).*/\1/p')
[ "$count" = 100 ] || fail "after a new container: $count of 100 documents"
echo "new container on the same volume: $count of 100 documents"

say "docker kill (SIGKILL) during writes loses no acknowledged write"
acked="$WORK/acked.txt"; : >"$acked"
( i=0; while true; do i=$((i+1)); curl -sf -m 5 -X PUT "$url/databases/shop/docs?id=kill/$i" -d "{\"I\":$i,\"@metadata\":{\"@collection\":\"Kill\"}}" >/dev/null && echo "kill/$i" >>"$acked" || exit 0; done ) &
writer=$!
sleep 3
docker kill ravenlite-deploy-b >/dev/null
wait $writer || true
docker rm ravenlite-deploy-b >/dev/null
n=$(wc -l <"$acked")
[ "$n" -gt 0 ] || fail "no write was acknowledged before the kill"
run ravenlite-deploy-c
healthy ravenlite-deploy-c
missing=0
while read -r id; do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/databases/shop/docs?id=$id")" = 200 ] || missing=$((missing+1))
done <"$acked"
[ "$missing" = 0 ] || fail "$missing of $n acknowledged writes lost after SIGKILL"
echo "SIGKILL after $n acknowledged writes: all $n present after the restart"
docker stop ravenlite-deploy-c >/dev/null

say "docker-compose"
docker-compose -f docker-compose.yml config -q && echo "docker-compose config: valid"
RAVENLITE_TEST_PORT=18081 docker-compose -p ravenlite-deploy -f docker-compose.yml -f tests/deploy/docker-compose.host.yml up -d --no-build 2>&1 | tail -2
cid=$(docker-compose -p ravenlite-deploy -f docker-compose.yml -f tests/deploy/docker-compose.host.yml ps -q ravenlite)
healthy "$cid"
echo "compose service healthy: $(curl -s http://127.0.0.1:18081/readyz)"
docker-compose -p ravenlite-deploy -f docker-compose.yml -f tests/deploy/docker-compose.host.yml down -v 2>&1 | tail -1
[ -z "$(docker ps -q --filter "id=$cid")" ] || fail "compose down left the container running"
echo "compose down: stopped"

say "docker-compose.cluster.yml: three nodes form a cluster through the HTTP API"
export RAVENLITE_IMAGE="$IMAGE" RAVENLITE_PORT_A=18090 RAVENLITE_PORT_B=18091 RAVENLITE_PORT_C=18092
export RAVENLITE_RAFT_PORT_A=38090 RAVENLITE_RAFT_PORT_B=38091 RAVENLITE_RAFT_PORT_C=38092
cluster() { docker-compose -p ravenlite-cluster -f docker-compose.cluster.yml "$@"; }
cluster config -q && echo "docker-compose.cluster.yml: valid"
cluster up -d --no-build 2>&1 | tail -3
for node in node-a node-b node-c; do healthy "$(cluster ps -q $node)"; done
for port in 18091 18092; do
  added=$(curl -sf -X PUT "http://127.0.0.1:18090/admin/cluster/node?url=http://127.0.0.1:$port") || fail "node A could not add the node on $port"
  echo "$added"
done
added_index=$(echo "$added" | sed -n 's/.*"RaftCommandIndex":\([0-9]*\).*/\1/p')
curl -sf "http://127.0.0.1:18092/rachis/waitfor?index=$added_index" >/dev/null || fail "node C did not apply index $added_index"
topology=$(curl -sf http://127.0.0.1:18092/cluster/topology)
for tag in A B C; do echo "$topology" | grep -q "\"$tag\":\"http://127.0.0.1:1809" || fail "node C's topology lacks $tag: $topology"; done
created=$(curl -sf -X PUT "http://127.0.0.1:18091/admin/databases?name=orders&replicationFactor=3" -d '{"DatabaseName":"orders"}') || fail "no database with replication factor 3"
index=$(echo "$created" | sed -n 's/.*"RaftCommandIndex":\([0-9]*\).*/\1/p')
for port in 18090 18091 18092; do curl -sf "http://127.0.0.1:$port/rachis/waitfor?index=$index" >/dev/null || fail "node on $port did not apply index $index"; done
curl -sf -X PUT "http://127.0.0.1:18090/databases/orders/docs?id=orders/1" -d '{"Via":"A","@metadata":{"@collection":"Orders"}}' >/dev/null || fail "write through A"
for _ in $(seq 1 30); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:18092/databases/orders/docs?id=orders/1")" = 200 ] && break
  sleep 1
done
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:18092/databases/orders/docs?id=orders/1")" = 200 ] || fail "orders/1 written through A never reached C"
echo "cluster of three formed; orders/1 written through A read through C"
cluster down -v 2>&1 | tail -1

say "deploy check: ok"
