#!/usr/bin/env bash
# PLACEMENT_SERVER_CMD for `make e2e`: a fresh 3-node compose cluster per
# gabbi file (the image and flags of the Helm chart's pods), reached through
# one client address as the chart's client Service gives: a small TCP relay
# that sends each connection to the next node in turn (leader and
# followers alike). It opens only once all three nodes are healthy, so the
# harness's first GET / means the cluster is ready. SIGTERM from the
# harness takes the cluster down with its volumes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
compose() { "$here/compose.sh" "$@"; }
# Three distinct free ports, none of them the harness's client port (the
# kernel may hand back a port just released, and run.py has released its).
read -r PLACEMENTD_NODE1_PORT PLACEMENTD_NODE2_PORT PLACEMENTD_NODE3_PORT < <(python3 - "$PLACEMENT_PORT" <<'PY'
import socket, sys
held, ports = [], []
while len(ports) < 3:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); held.append(s)
    p = s.getsockname()[1]
    if str(p) != sys.argv[1]:
        ports.append(p)
print(*ports)
PY
)
export PLACEMENTD_NODE1_PORT PLACEMENTD_NODE2_PORT PLACEMENTD_NODE3_PORT
export PLACEMENTD_CORS_ALLOWED_ORIGIN=${PLACEMENT_CORS_ALLOWED_ORIGIN:-}
export PLACEMENTD_CORS_ALLOW_HEADERS=${PLACEMENT_CORS_ALLOW_HEADERS:-}
export PLACEMENTD_LOG_LEVEL=warn
down() { compose down -v -t 0 >/dev/null 2>&1 || true; }
down
trap down EXIT
trap 'exit 0' TERM INT
# Compose's own output goes to the harness's log only if it fails.
out=$(compose up -d 2>&1) || { echo "$out" >&2; exit 1; }
for i in $(seq 150); do
  # Until the first node answers, status fails: that is "0 healthy", not an
  # error of this script (set -e with pipefail would end it here).
  n=$("$root/bin/placementd" cluster status --addr "127.0.0.1:$PLACEMENTD_NODE1_PORT" \
      --cluster-secret "$PLACEMENTD_CLUSTER_SECRET" 2>/dev/null | awk 'NR>3 && $4=="true" {n++} END {print n+0}') || n=0
  [[ $n == 3 ]] && break
  sleep 0.2
done
python3 - "$PLACEMENT_HOST" "$PLACEMENT_PORT" "$PLACEMENTD_NODE1_PORT" "$PLACEMENTD_NODE2_PORT" "$PLACEMENTD_NODE3_PORT" <<'PY' &
import itertools, socket, sys, threading
host, port = sys.argv[1], int(sys.argv[2])
targets = itertools.cycle(int(p) for p in sys.argv[3:])
def pipe(a, b):
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try: s.shutdown(socket.SHUT_RDWR)
            except OSError: pass
ln = socket.create_server((host, port))
while True:
    c, _ = ln.accept()
    u = socket.create_connection(("127.0.0.1", next(targets)))
    threading.Thread(target=pipe, args=(c, u), daemon=True).start()
    threading.Thread(target=pipe, args=(u, c), daemon=True).start()
PY
wait
