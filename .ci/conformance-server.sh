#!/usr/bin/env bash
# The command the conformance harness (../shared/conformance/run.py) runs to
# start a fresh placementd for each gabbi file; see its README for the
# PLACEMENT_* variables.
here=$(cd "$(dirname "$0")/.." && pwd)
exec "${PLACEMENTD_BIN:-$here/bin/placementd}" serve \
  --http-addr "$PLACEMENT_HOST:$PLACEMENT_PORT" \
  --raft-addr 127.0.0.1:0 \
  --data-dir "$PLACEMENT_DATA_DIR" \
  --node-id conformance \
  --policy-file "${PLACEMENT_POLICY_FILE:-}" \
  --policy-enforce-new-defaults="${PLACEMENT_ENFORCE_NEW_DEFAULTS:-false}" \
  --policy-enforce-scope="${PLACEMENT_ENFORCE_SCOPE:-true}" \
  --cors-allowed-origin "${PLACEMENT_CORS_ALLOWED_ORIGIN:-}" \
  --cors-allow-headers "${PLACEMENT_CORS_ALLOW_HEADERS:-}" \
  --log-level warn
