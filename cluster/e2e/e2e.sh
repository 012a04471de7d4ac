#!/usr/bin/env bash
# make e2e: build the FROM-scratch image from the static binary (the image
# the Helm chart runs), run the foundation conformance files through one
# client address spread over the nodes of a 3-node compose cluster formed
# as the chart's pods form theirs (--bootstrap-expect), then `docker kill`
# the leader and check the cluster still serves, and that the killed node
# recovers and converges when started.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
conformance_dir=${CONFORMANCE_DIR:-$root/../shared/conformance}
files=${CONFORMANCE_FILES:-basic-http microversion resource-classes traits}
# Named after the checkout, so two checkouts' runs on one machine (two CI
# runs at once) never share, or take down, each other's containers.
checkout_id=$(printf %s "$root" | cksum | cut -d' ' -f1)
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-placementd-e2e-$checkout_id}
export PLACEMENTD_CLUSTER_SECRET=${PLACEMENTD_CLUSTER_SECRET:-e2e-$$-$RANDOM}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
export PLACEMENTD_NODE1_PORT=$(free_port) PLACEMENTD_NODE3_PORT=$(free_port)
compose() { "$here/compose.sh" "$@"; }
trap 'compose down -v -t 0 >/dev/null 2>&1 || true' EXIT

echo "== image"
make build
docker build -q -t placementd:local .

echo "== conformance through a client address spread over the three nodes"
paths=()
for f in $files; do paths+=("$conformance_dir/gabbits/$f.yaml"); done
PLACEMENT_SERVER_CMD="$here/conformance-server.sh" /usr/bin/python3 "$conformance_dir/run.py" --list-failures "${paths[@]}"

echo "== leader killed with docker kill"
export PLACEMENTD_NODE2_PORT=$(free_port)
compose down -v -t 0 >/dev/null 2>&1 || true
compose up -d
declare -A port=([node1]=$PLACEMENTD_NODE1_PORT [node2]=$PLACEMENTD_NODE2_PORT [node3]=$PLACEMENTD_NODE3_PORT)
self() { curl -s -m 3 -H "Authorization: Bearer $PLACEMENTD_CLUSTER_SECRET" "127.0.0.1:${port[$1]}/_cluster/self"; }
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])" 2>/dev/null || echo "?"; }
healthy() { # healthy N: N members report healthy
  bin/placementd cluster status --addr "127.0.0.1:${port[${2:-node1}]}" --cluster-secret "$PLACEMENTD_CLUSTER_SECRET" 2>/dev/null |
    awk -v want="$1" 'NR>3 && $4=="true" {n++} END {exit !(n==want)}'
}
for i in $(seq 100); do healthy 3 && break; sleep 0.2; done
healthy 3 || { echo "cluster did not come up"; compose logs; exit 1; }
leader=$(self node1 | field leader)
survivors=()
for n in node1 node2 node3; do [[ $n != "$leader" ]] && survivors+=("$n"); done
echo "leader $leader; survivors ${survivors[*]}"
api() { # api METHOD NODE PATH [BODY] -> status code
  curl -s -m 15 -o /dev/null -w '%{http_code}' -X "$1" -H 'X-Auth-Token: admin' \
    -H 'OpenStack-API-Version: placement 1.39' -H 'Content-Type: application/json' \
    ${4:+-d "$4"} "127.0.0.1:${port[$2]}$3"
}
rp=$(python3 -c 'import uuid; print(uuid.uuid4())')
[[ $(api POST "${survivors[0]}" /resource_providers "{\"name\":\"before-kill\",\"uuid\":\"$rp\"}") == 200 ]]
docker kill "$(compose ps -q "$leader")" >/dev/null
killed=$(date +%s.%N)
code=000
for i in $(seq 200); do
  code=$(api PUT "${survivors[1]}" /resource_classes/CUSTOM_AFTER_KILL)
  [[ $code == 201 ]] && break
  sleep 0.05
done
took=$(python3 -c "import time; print(round(time.time()-$killed, 2))")
echo "write after the kill: $code after ${took}s"
[[ $code == 201 ]]
python3 -c "import sys; sys.exit(0 if $took < 5 else 1)" || { echo "writes resumed too late"; exit 1; }
[[ $(api GET "${survivors[1]}" "/resource_providers/$rp") == 200 ]]
[[ $(api GET "${survivors[0]}" /resource_classes/CUSTOM_AFTER_KILL) == 200 ]]
echo "new leader: $(self "${survivors[0]}" | field leader)"

echo "== killed node restarted"
docker start "$(compose ps -q "$leader")" >/dev/null
for i in $(seq 150); do healthy 3 "${survivors[0]}" && break; sleep 0.2; done
for i in $(seq 150); do
  d=$(for n in node1 node2 node3; do self $n | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["digest"], d["state_index"])' 2>/dev/null || echo down; done | sort -u)
  [[ $(echo "$d" | wc -l) == 1 && $d != down ]] && break
  sleep 0.2
done
echo "digests: $d"
[[ $(echo "$d" | wc -l) == 1 && $d != down ]]
[[ $(api GET "$leader" /resource_classes/CUSTOM_AFTER_KILL) == 200 ]]
echo "e2e: ok"
