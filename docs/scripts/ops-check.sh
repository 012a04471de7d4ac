#!/usr/bin/env bash
# Runs the commands of docs/operators-guide.md against real placementd
# processes, so that the guide stays true:
#   1. a single node, grown to a 3-node cluster with --join
#   2. /healthz, /readyz, /metrics on every node; `cluster status`
#   3. the openstack CLI (osc-placement) through a follower (skipped when
#      the CLI is not installed, unless OSC=1)
#   4. backup: `snapshot save` through a follower, `snapshot inspect`,
#      `snapshot restore` into a new node, which answers with the digest
#   5. a rolling restart, node by node, as for an upgrade
#   6. a graceful stop of every node
# With DOCKER=1 it also builds the image, starts docker-compose.yml and
# saves a snapshot from it.
#
#   make build && docs/scripts/ops-check.sh        (or: make ops-check)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${PLACEMENTD_BIN:-$root/bin/placementd}
[[ -x $bin ]] || { echo "ops-check: $bin not built (make build)" >&2; exit 2; }
work=$(mktemp -d /tmp/placementd-ops-check.XXXXXX)
secret=ops-check-$RANDOM$RANDOM
# The scrape credential the guide gives Prometheus (opens /metrics only).
metrics_token=ops-check-metrics-$RANDOM$RANDOM
declare -A pid http raft
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

cleanup() {
  for n in "${!pid[@]}"; do kill "${pid[$n]}" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ ${KEEP:-} == 1 ]]; then echo "ops-check: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() { echo "ops-check: FAIL: $*" >&2; for f in "$work"/*.log; do echo "== $f" >&2; tail -20 "$f" >&2; done; exit 1; }
say() { echo "== $*"; }

# start NODE [serve flags...]: a node with its own data dir and log.
start() {
  local n=$1; shift
  [[ -n ${http[$n]:-} ]] || { http[$n]=$(free_port); raft[$n]=$(free_port); }
  PLACEMENTD_METRICS_TOKEN=$metrics_token "$bin" serve --node-id "$n" --http-addr "127.0.0.1:${http[$n]}" --raft-addr "127.0.0.1:${raft[$n]}" \
    --data-dir "$work/$n" --cluster-secret "$secret" "$@" >>"$work/$n.log" 2>&1 &
  pid[$n]=$!
}
# stop NODE: SIGTERM, and the node must exit 0 within the shutdown timeout.
stop() {
  kill -TERM "${pid[$1]}"
  wait "${pid[$1]}" || fail "$1 exited with $? on SIGTERM"
  unset "pid[$1]"
}
ready() { [[ $(curl -s -o /dev/null -w '%{http_code}' -m 2 "127.0.0.1:${http[$1]}/readyz") == 200 ]]; }
wait_ready() {
  for _ in $(seq 150); do ready "$1" && return 0; sleep 0.1; done
  fail "$1 not ready: $(curl -s -m 2 "127.0.0.1:${http[$1]}/readyz")"
}
self() { curl -fsS -m 5 -H "Authorization: Bearer $secret" "127.0.0.1:${http[$1]}/_cluster/self"; }
healthy() { # healthy N VIA: cluster status shows N healthy members
  "$bin" cluster status --addr "127.0.0.1:${http[$2]}" --cluster-secret "$secret" 2>/dev/null |
    awk -v want="$1" 'NR>3 && $4=="true" {n++} END {exit !(n==want)}'
}
wait_healthy() {
  for _ in $(seq 150); do healthy "$1" "$2" && return 0; sleep 0.1; done
  "$bin" cluster status --addr "127.0.0.1:${http[$2]}" --cluster-secret "$secret" || true
  fail "cluster did not reach $1 healthy members"
}
api() { # api METHOD NODE PATH [BODY] -> status code
  curl -s -m 15 -o /dev/null -w '%{http_code}' -X "$1" -H 'X-Auth-Token: admin' \
    -H 'OpenStack-API-Version: placement 1.39' -H 'Content-Type: application/json' \
    ${4:+-d "$4"} "127.0.0.1:${http[$2]}$3"
}
metric() { # metric NODE SERIES -> value
  curl -fsS -m 5 -H "Authorization: Bearer $metrics_token" "127.0.0.1:${http[$1]}/metrics" | awk -v s="$2" '$1==s {print $2}'
}
digest_of() { self "$1" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["digest"], d["state_index"])'; }

say "1. single node, grown to three"
start n1
wait_ready n1
[[ $(api PUT n1 /traits/CUSTOM_OPS_CHECK) == 201 ]] || fail "write on the single node"
start n2 --join "127.0.0.1:${http[n1]}"
start n3 --join "127.0.0.1:${http[n1]},127.0.0.1:${http[n2]}"
wait_healthy 3 n1
for n in n1 n2 n3; do wait_ready "$n"; done
"$bin" cluster status --addr "127.0.0.1:${http[n2]}" --cluster-secret "$secret"

say "2. probes and metrics"
rp=$(python3 -c 'import uuid; print(uuid.uuid4())')
[[ $(api POST n3 /resource_providers "{\"name\":\"ops-check\",\"uuid\":\"$rp\"}") == 200 ]] || fail "write through a follower"
for n in n1 n2 n3; do
  [[ $(curl -s -m 2 "127.0.0.1:${http[$n]}/healthz") == ok ]] || fail "$n /healthz"
  [[ $(metric "$n" 'placementd_raft_peers{suffrage="voter"}') == 3 ]] || fail "$n: voters metric"
  [[ $(metric "$n" placementd_raft_has_leader) == 1 ]] || fail "$n: has_leader metric"
done
leader=$(self n1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["leader"])')
for _ in $(seq 50); do [[ $(metric n2 placementd_resource_providers) == 1 ]] && break; sleep 0.1; done
[[ $(metric n2 placementd_resource_providers) == 1 ]] || fail "state metric on n2"
[[ $(metric "$leader" 'placementd_http_requests_total{method="POST",route="/resource_providers",status="200"}') == 1 ]] ||
  fail "request counted on the leader $leader"
[[ $(curl -s -o /dev/null -w '%{http_code}' -m 5 -H "Authorization: Bearer $metrics_token" "127.0.0.1:${http[n1]}/_cluster/status") == 401 ]] ||
  fail "the metrics token opened the operator API"
echo "probes and metrics ok (leader $leader)"

say "3. openstack CLI through a follower"
follower=n1; [[ $leader == n1 ]] && follower=n2
if command -v openstack >/dev/null || [[ ${OSC:-} == 1 ]]; then
  PLACEMENT_URL="http://127.0.0.1:${http[$follower]}" "$root/docs/scripts/osc-smoke.sh"
else
  echo "skipped: openstack CLI not installed (apt-get install python3-openstackclient python3-osc-placement)"
fi

say "4. backup and restore"
"$bin" snapshot save "$work/backup.snap" --addr "127.0.0.1:${http[$follower]}" --cluster-secret "$secret"
want=$("$bin" snapshot inspect "$work/backup.snap" | awk '/^digest/ {print $2}')
"$bin" snapshot restore "$work/backup.snap" --data-dir "$work/r1" --node-id r1
start r1
wait_ready r1
got=$(digest_of r1 | cut -d' ' -f1)
[[ $got == "$want" ]] || fail "restored digest $got, backup $want"
[[ $(api GET r1 "/resource_providers/$rp") == 200 ]] || fail "restored node lacks the provider"
stop r1
echo "restore ok: digest $want"

say "5. rolling restart, node by node"
for n in n1 n2 n3; do
  stop "$n"
  others=(); for o in n1 n2 n3; do [[ $o != "$n" ]] && others+=("$o"); done
  [[ $(api PUT "${others[0]}" "/traits/CUSTOM_WHILE_${n^^}_DOWN") == 201 ]] || fail "write while $n is down"
  start "$n"   # same flags; it rejoins through the peers it remembers
  wait_ready "$n"
  wait_healthy 3 "${others[0]}"
done
for _ in $(seq 100); do
  d1=$(digest_of n1) d2=$(digest_of n2) d3=$(digest_of n3)
  [[ $d1 == "$d2" && $d2 == "$d3" ]] && break
  sleep 0.1
done
[[ $d1 == "$d2" && $d2 == "$d3" ]] || fail "digests differ after the rolling restart: $d1 / $d2 / $d3"
[[ $(api GET n3 /traits/CUSTOM_WHILE_N1_DOWN) == 204 ]] || fail "write made during the restarts lost"
echo "rolling restart ok: $d1"

say "6. graceful stop"
for n in n3 n2 n1; do stop "$n"; done

if [[ ${DOCKER:-} == 1 ]]; then
  say "7. docker image and compose"
  # Named after the checkout, as make e2e's: concurrent runs of two
  # checkouts keep apart.
  export COMPOSE_PROJECT_NAME=placementd-ops-check-$(printf %s "$root" | cksum | cut -d' ' -f1)
  export PLACEMENTD_CLUSTER_SECRET=$secret
  export PLACEMENTD_NODE1_PORT=$(free_port) PLACEMENTD_NODE2_PORT=$(free_port) PLACEMENTD_NODE3_PORT=$(free_port)
  compose() { "$root/cluster/e2e/compose.sh" "$@"; }
  trap 'compose down -v -t 0 >/dev/null 2>&1 || true; cleanup' EXIT
  (cd "$root" && docker build -q -t placementd:local .)
  (cd "$root" && compose up -d)
  http[c1]=$PLACEMENTD_NODE1_PORT http[c2]=$PLACEMENTD_NODE2_PORT http[c3]=$PLACEMENTD_NODE3_PORT
  for n in c1 c2 c3; do wait_ready "$n"; done
  wait_healthy 3 c1
  "$bin" snapshot save "$work/compose.snap" --addr "127.0.0.1:${http[c2]}" --cluster-secret "$secret"
  (cd "$root" && compose down -v -t 20)
fi
echo "ops-check: all steps passed"
