#!/usr/bin/env bash
# Runs docker compose (the plugin, or the older docker-compose) on the
# repository's docker-compose.yml, in project $COMPOSE_PROJECT_NAME.
root=$(cd "$(dirname "$0")/../.." && pwd)
if docker compose version >/dev/null 2>&1; then
  exec docker compose -f "$root/docker-compose.yml" "$@"
fi
exec docker-compose -f "$root/docker-compose.yml" "$@"
