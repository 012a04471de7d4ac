#!/usr/bin/env bash
# Drives the real `openstack` CLI with the osc-placement plugin (Debian:
# python3-openstackclient, python3-osc-placement) against a running
# placementd with noauth2, through providers, inventories, resource
# classes, traits, aggregates, allocations, usages and allocation
# candidates, checking what it prints.
#
#   PLACEMENT_URL=http://127.0.0.1:8778 docs/scripts/osc-smoke.sh
#
# Use any node of a cluster: followers forward to the leader. The script
# creates its own objects (random names) and removes them at the end.
set -euo pipefail

url=${PLACEMENT_URL:-http://127.0.0.1:8778}
# noauth2: the token is "user[:project]"; the user "admin" gets the admin
# role. keystoneauth's admin_token plugin sends it as X-Auth-Token to a
# fixed endpoint, without Keystone.
export OS_AUTH_TYPE=admin_token OS_ENDPOINT=$url OS_TOKEN=admin
unset OS_CLOUD OS_AUTH_URL OS_USERNAME OS_PASSWORD OS_PROJECT_NAME 2>/dev/null || true

command -v openstack >/dev/null || { echo "osc-smoke: the openstack CLI is not installed (apt-get install python3-openstackclient python3-osc-placement)" >&2; exit 2; }
command -v jq >/dev/null || { echo "osc-smoke: jq is needed" >&2; exit 2; }

step=0
osc() { openstack "$@"; }
check() { # check DESCRIPTION ACTUAL EXPECTED
  step=$((step + 1))
  if [[ "$2" != "$3" ]]; then
    echo "osc-smoke: FAIL ($step) $1: got [$2], want [$3]" >&2
    exit 1
  fi
  echo "ok $step - $1"
}

tag=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
TAG=${tag^^}
rc=CUSTOM_OSC_$TAG
trait=CUSTOM_OSC_TRAIT_$TAG
agg=$(cat /proc/sys/kernel/random/uuid)
consumer=$(cat /proc/sys/kernel/random/uuid)
project=$(cat /proc/sys/kernel/random/uuid)
user=$(cat /proc/sys/kernel/random/uuid)

# Version negotiation: osc-placement asks GET / for the maximum.
root=$(curl -fsS "$url/" | jq -r '.versions[0].max_version')
check "GET / reports the maximum microversion" "$root" "1.39"

# Resource classes and traits.
osc resource class create "$rc" >/dev/null
check "resource class show" "$(osc resource class show "$rc" -f value -c name)" "$rc"
osc trait create "$trait"
check "trait show" "$(osc trait show "$trait" -f value -c name)" "$trait"

# Providers: a compute node and a child (a GPU) under it.
cn=$(osc resource provider create "osc-cn-$tag" -f value -c uuid)
gpu=$(osc --os-placement-api-version 1.14 resource provider create "osc-gpu-$tag" --parent-provider "$cn" -f value -c uuid)
check "child provider's root" "$(osc --os-placement-api-version 1.14 resource provider show "$gpu" -f value -c root_provider_uuid)" "$cn"
osc resource provider set "$cn" --name "osc-cn-renamed-$tag" >/dev/null
check "provider rename" "$(osc resource provider show "$cn" -f value -c name)" "osc-cn-renamed-$tag"
check "provider list by name" "$(osc resource provider list --name "osc-cn-renamed-$tag" -f value -c uuid)" "$cn"

# Inventories.
osc resource provider inventory set "$cn" --resource VCPU=8 --resource VCPU:allocation_ratio=2.0 \
  --resource MEMORY_MB=4096 --resource MEMORY_MB:reserved=512 >/dev/null
osc resource provider inventory set "$gpu" --resource "$rc=2" >/dev/null
check "inventory show" "$(osc resource provider inventory show "$cn" VCPU -f json | jq -c '[.total, .allocation_ratio]')" "[8,2]"
osc resource provider inventory set "$cn" --amend --resource DISK_GB=100 >/dev/null
osc resource provider inventory class set "$cn" VCPU --total 16 --allocation_ratio 2.0 >/dev/null
check "inventory class set" "$(osc resource provider inventory show "$cn" VCPU -f value -c total)" "16"
check "inventory list" "$(osc resource provider inventory list "$cn" -f json | jq -r '[.[].resource_class] | sort | join(",")')" "DISK_GB,MEMORY_MB,VCPU"
osc resource provider inventory delete "$cn" --resource-class DISK_GB
check "inventory delete" "$(osc resource provider inventory list "$cn" -f json | jq length)" "2"

# Traits and aggregates (1.19: aggregates with the provider generation).
osc --os-placement-api-version 1.6 resource provider trait set "$cn" --trait "$trait" --trait HW_CPU_X86_AVX2 >/dev/null
check "provider traits" "$(osc --os-placement-api-version 1.6 resource provider trait list "$cn" -f value -c name | sort | tr '\n' ' ')" "$(printf '%s\n' HW_CPU_X86_AVX2 "$trait" | sort | tr '\n' ' ')"
gen=$(osc resource provider show "$cn" -f value -c generation)
osc --os-placement-api-version 1.19 resource provider aggregate set "$cn" --aggregate "$agg" --generation "$gen" >/dev/null
check "provider aggregates" "$(osc --os-placement-api-version 1.19 resource provider aggregate list "$cn" -f value -c uuid)" "$agg"

# Allocation candidates: member of the aggregate, with the trait.
cands=$(osc --os-placement-api-version 1.21 allocation candidate list --resource VCPU=2 --resource MEMORY_MB=1024 \
  --required "$trait" --member-of "$agg" -f json)
check "allocation candidates" "$(jq -r '[.[]."#"] | unique | length' <<<"$cands")" "1"
check "candidate is the compute node" "$(jq -r '[.[]."resource provider"] | unique | join(",")' <<<"$cands")" "$cn"

# Allocations (1.38: with a consumer type), usages.
osc --os-placement-api-version 1.38 resource provider allocation set "$consumer" \
  --allocation "rp=$cn,VCPU=2,MEMORY_MB=1024" --allocation "rp=$gpu,$rc=1" \
  --project-id "$project" --user-id "$user" --consumer-type INSTANCE >/dev/null
check "allocation show" "$(osc --os-placement-api-version 1.38 resource provider allocation show "$consumer" -f json | jq -r '[.[].resource_provider] | sort | join(",")')" "$(printf '%s\n' "$cn" "$gpu" | sort | paste -sd,)"
check "provider usage" "$(osc resource provider usage show "$cn" -f json | jq -cS 'map({(.resource_class): .usage}) | add')" '{"MEMORY_MB":1024,"VCPU":2}'
check "project usage" "$(osc --os-placement-api-version 1.9 resource usage show "$project" --user-id "$user" -f json | jq -cS 'map({(.resource_class): .usage}) | add')" "{\"$rc\":1,\"MEMORY_MB\":1024,\"VCPU\":2}"
# Too much for the node: Placement refuses, the CLI fails.
if osc --os-placement-api-version 1.38 resource provider allocation set "$(cat /proc/sys/kernel/random/uuid)" \
  --allocation "rp=$cn,VCPU=100" --project-id "$project" --user-id "$user" --consumer-type INSTANCE >/dev/null 2>&1; then
  check "over-capacity allocation refused" "accepted" "refused"
fi
check "over-capacity allocation refused" "refused" "refused"
osc --os-placement-api-version 1.38 resource provider allocation unset "$consumer" --provider "$gpu" >/dev/null
check "allocation unset" "$(osc --os-placement-api-version 1.38 resource provider allocation show "$consumer" -f value -c resource_provider)" "$cn"
osc resource provider allocation delete "$consumer"
check "allocation delete" "$(osc resource provider usage show "$cn" -f json | jq -c 'map(.usage) | add')" "0"

# Clean up.
osc resource provider delete "$gpu"
osc resource provider delete "$cn"
osc trait delete "$trait"
osc resource class delete "$rc"
check "cleaned up" "$(osc resource provider list --name "osc-cn-renamed-$tag" -f value -c uuid)" ""
echo "osc-smoke: all $step checks passed against $url"
