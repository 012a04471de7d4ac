#!/usr/bin/env bash
# Runs Docker Compose on the repository's docker-compose.yml with whichever
# Compose this machine has: the `docker compose` plugin or the older
# `docker-compose` (Debian's package).
root=$(cd "$(dirname "$0")/../.." && pwd)
if docker compose version >/dev/null 2>&1; then
  exec docker compose -f "$root/docker-compose.yml" "$@"
fi
exec docker-compose -f "$root/docker-compose.yml" "$@"
