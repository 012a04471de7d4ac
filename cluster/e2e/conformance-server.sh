#!/usr/bin/env bash
# PLACEMENT_SERVER_CMD for the conformance harness (see
# ../../../shared/conformance/README.md): a fresh 3-node compose cluster
# for every gabbi file, the harness talking to node2, a follower (node1
# starts the cluster and leads it; node2 joins it).
here=$(cd "$(dirname "$0")" && pwd)
export PLACEMENTD_NODE2_PORT=$PLACEMENT_PORT
export PLACEMENTD_CORS_ALLOWED_ORIGIN=${PLACEMENT_CORS_ALLOWED_ORIGIN:-}
export PLACEMENTD_CORS_ALLOW_HEADERS=${PLACEMENT_CORS_ALLOW_HEADERS:-}
export PLACEMENTD_LOG_LEVEL=warn
"$here/compose.sh" down -v -t 0 >/dev/null 2>&1
stop() { "$here/compose.sh" down -v -t 0 >/dev/null 2>&1; exit 0; }
trap stop TERM INT
"$here/compose.sh" up -d >/dev/null 2>&1 || { "$here/compose.sh" up -d; exit 1; }
# The harness polls GET / until the cluster answers; follow the logs
# meanwhile (it keeps them with --server-logs).
"$here/compose.sh" logs -f --no-color &
wait
