#!/bin/bash
# make bench-compare: the same workload (bench/loadgen) against upstream
# Placement from Debian's packages (placement-api under uwsgi with the
# package's uwsgi settings, MariaDB behind it) with
# randomize_allocation_candidates on, as clouds and upstream's performance
# job run it, and placementd with randomization on and off, as a single
# node and as a 3-node cluster, one after the other in one run, then one
# table with ratios to upstream. The workload starts with upstream's
# performance-gate shape (loadgen's gate phase: 99 claims, then ab -c 10
# -n 500 of its allocation-candidates query) on the fleet as set up, as
# upstream's gate job runs it, once over kept-alive connections and once
# with a new connection per request (ab without -k, gate-new-conn); the
# other phases follow.
#
# Settings (environment): NODES (1000), CLIENTS (8, Nova's schedulers),
# DURATION per phase (20s), NUMA (false), LIMIT (50), TARGETS (upstream,
# then placementd-1, placementd-3-leader and placementd-3, each plain and
# -random: 3 nodes with every client sent to the leader, as a load
# balancer checking /readyz?leader=true routes, and with the clients
# spread over them; -random sets --randomize-allocation-candidates; and
# placementd-3-follower-random, every client sent to one follower, for
# the cost of the forwarding hop on writes),
# PHASES (every phase) for upstream and the -random targets, OFF_PHASES
# (gate,scheduler) for the others, KEEP=1 keeps the work directory,
# REPORT_DIR receives the JSON reports.
# Needs root (apt-get, a private MariaDB server run as mysql).
set -euo pipefail

NODES=${NODES:-1000}
CLIENTS=${CLIENTS:-8}
DURATION=${DURATION:-20s}
NUMA=${NUMA:-false}
LIMIT=${LIMIT:-50}
TARGETS=${TARGETS:-upstream placementd-1 placementd-1-random placementd-3-leader placementd-3-leader-random placementd-3 placementd-3-random placementd-3-follower-random}
PHASES=${PHASES:-gate,gate-new-conn,scheduler,put,put-paced,post,usages,delete}
OFF_PHASES=${OFF_PHASES:-gate,gate-new-conn,scheduler}
GO=${GO:-go}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/bench-compare.XXXXXX)
chmod 755 "$WORK"
PIDS=()

log() { echo "bench-compare: $*" >&2; }

cleanup() {
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	stop_mariadb
	if [ "${KEEP:-}" = 1 ]; then
		log "work directory kept: $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_http URL [SECONDS]: until the URL answers at all.
wait_http() {
	local deadline=$((SECONDS + ${2:-60}))
	until curl -s -o /dev/null "$1"; do
		if [ $SECONDS -ge $deadline ]; then
			log "$1 did not come up"
			return 1
		fi
		sleep 0.2
	done
}

# stop PID: SIGTERM, then wait for it.
stop() {
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

ensure_packages() {
	local missing=()
	for p in mariadb-server python3-placement placement-api uwsgi uwsgi-plugin-python3 python3-pymysql; do
		dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		log "installing ${missing[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
	fi
}

DBDIR=
DBPORT=
start_mariadb() {
	DBDIR=$WORK/mariadb
	DBPORT=$(free_port)
	mkdir -p "$DBDIR"
	chown mysql: "$DBDIR"
	# A private server (own data directory, socket and port, no option
	# files read): no other database on the machine is touched. Settings
	# are the defaults (durable InnoDB commits) with the character set
	# Debian's server configuration sets, and enough connections for
	# uwsgi's processes.
	mariadb-install-db --no-defaults --user=mysql --datadir="$DBDIR/data" --skip-test-db >"$DBDIR/install.log" 2>&1
	mariadbd --no-defaults --user=mysql --datadir="$DBDIR/data" --socket="$DBDIR/mysqld.sock" \
		--pid-file="$DBDIR/mysqld.pid" --log-error="$DBDIR/error.log" --bind-address=127.0.0.1 --port="$DBPORT" \
		--character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci --max-connections=400 2>"$DBDIR/stderr.log" &
	PIDS+=($!)
	local deadline=$((SECONDS + 60))
	until mariadb-admin --no-defaults --socket="$DBDIR/mysqld.sock" -u root ping >/dev/null 2>&1 && [ -s "$DBDIR/mysqld.pid" ]; do
		if [ $SECONDS -ge $deadline ]; then
			log "MariaDB did not start: $(tail -5 "$DBDIR/error.log" 2>/dev/null)"
			return 1
		fi
		sleep 0.2
	done
	# root authenticates by the socket's peer (unix_socket): this script
	# runs as root.
	mariadb --no-defaults --socket="$DBDIR/mysqld.sock" -u root -e \
		"CREATE DATABASE placement; CREATE USER 'placement'@'127.0.0.1' IDENTIFIED BY 'placement'; GRANT ALL ON placement.* TO 'placement'@'127.0.0.1';"
}

stop_mariadb() {
	if [ -n "$DBDIR" ] && [ -s "$DBDIR/mysqld.pid" ]; then
		local pid
		pid=$(cat "$DBDIR/mysqld.pid")
		kill "$pid" 2>/dev/null || true
		# Its shutdown flushes InnoDB: wait until it has exited.
		while kill -0 "$pid" 2>/dev/null; do
			sleep 0.2
		done
	fi
}

# start_upstream: Placement as Debian's init script runs it
# (uwsgi_python3 --http-socket ... --ini /etc/placement/placement-api-uwsgi.ini),
# with the package's ini but logging and running in the work directory.
UPSTREAM_URL=
start_upstream() {
	local dir=$WORK/upstream port
	mkdir -p "$dir"
	port=$(free_port)
	cat >"$dir/placement.conf" <<EOF
[DEFAULT]
debug = false
[api]
auth_strategy = noauth2
[placement]
randomize_allocation_candidates = true
[placement_database]
connection = mysql+pymysql://placement:placement@127.0.0.1:$DBPORT/placement?charset=utf8
max_pool_size = 10
max_overflow = 30
EOF
	OS_PLACEMENT_CONFIG_DIR=$dir placement-manage --config-file "$dir/placement.conf" db sync
	grep -vE '^\s*(logto|uid|gid|chdir)\s*=' /etc/placement/placement-api-uwsgi.ini >"$dir/uwsgi.ini"
	printf 'logto = %s\nchdir = %s\n' "$dir/uwsgi.log" "$dir" >>"$dir/uwsgi.ini"
	local uwsgi=/usr/bin/uwsgi_python3
	[ -x "$uwsgi" ] || uwsgi=$(ls /usr/bin/uwsgi_python3* | head -1)
	OS_PLACEMENT_CONFIG_DIR=$dir "$uwsgi" --http-socket "127.0.0.1:$port" --ini "$dir/uwsgi.ini" &
	PIDS+=($!)
	UPSTREAM_PID=$!
	UPSTREAM_URL=http://127.0.0.1:$port
	wait_http "$UPSTREAM_URL/" 120
}

# start_placementd N [FLAG...]: a cluster of N nodes serving with the
# extra flags; sets PD_URLS and PD_PIDS.
PD_URLS=
PD_PIDS=()
start_placementd() {
	local n=$1 i first= secret=bench-compare
	shift
	PD_URLS=
	PD_PIDS=()
	rm -rf "$WORK"/pd"$n"-* # a fresh cluster each time (two targets run 3 nodes)
	for i in $(seq 1 "$n"); do
		local http raft args
		http=127.0.0.1:$(free_port)
		raft=127.0.0.1:$(free_port)
		args=(serve --node-id "p$i" --http-addr "$http" --raft-addr "$raft" --data-dir "$WORK/pd$n-$i"
			--cluster-secret "$secret" "$@")
		if [ -n "$first" ]; then
			args+=(--join "$first")
		else
			first=$http
		fi
		"$WORK/placementd" "${args[@]}" 2>>"$WORK/pd$n.log" &
		PIDS+=($!)
		PD_PIDS+=($!)
		PD_URLS+=${PD_URLS:+,}http://$http
		wait_http "http://$http/" 60
	done
	# Every member healthy and one leader before the workload starts.
	local deadline=$((SECONDS + 60))
	until [ "$(curl -s -H "Authorization: Bearer $secret" "http://$first/_cluster/status" | grep -o '"healthy": *true' | wc -l)" -eq "$n" ]; do
		if [ $SECONDS -ge $deadline ]; then
			log "placementd cluster of $n did not become healthy"
			return 1
		fi
		sleep 0.2
	done
}

stop_placementd() {
	local pid
	for pid in "${PD_PIDS[@]}"; do
		stop "$pid"
	done
}

# load LABEL URLS PIDS PHASES: the workload, with the CPU time of PIDS
# (and their descendants) measured per phase.
load() {
	local label=$1 urls=$2 pids=$3 phases=$4
	log "running the workload against $label ($urls), load average $(cut -d' ' -f1-3 /proc/loadavg)"
	# A failed verification is reported in the table, not fatal here.
	"$WORK/placement-load" -label "$label" -endpoints "$urls" -nodes "$NODES" -numa="$NUMA" \
		-clients "$CLIENTS" -duration "$DURATION" -limit "$LIMIT" -phases "$phases" -server-pids "$pids" \
		-json "$WORK/$label.json" >/dev/null || true
	[ -f "$WORK/$label.json" ] && REPORTS+=("$WORK/$label.json")
}

cd "$ROOT"
log "building placementd and the load generator"
CGO_ENABLED=0 $GO build -o "$WORK/placementd" ./cmd/placementd
$GO build -o "$WORK/placement-load" ./bench/cmd/placement-load

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
REPORTS=()
for target in $TARGETS; do
	case $target in
	upstream)
		ensure_packages
		start_mariadb
		start_upstream
		load upstream "$UPSTREAM_URL" "$UPSTREAM_PID,$(cat "$DBDIR/mysqld.pid")" "$PHASES"
		# Free the cores for the next target.
		stop "$UPSTREAM_PID"
		stop_mariadb
		;;
	placementd-*)
		# placementd-N[-leader][-random]
		spec=${target#placementd-}
		flags=() phases=$OFF_PHASES
		if [ "${spec%-random}" != "$spec" ]; then
			flags=(--randomize-allocation-candidates) phases=$PHASES
			spec=${spec%-random}
		fi
		to=
		case $spec in
		*-leader) to=leader spec=${spec%-leader} ;;
		*-follower) to=follower spec=${spec%-follower} ;;
		esac
		case $spec in
		'' | *[!0-9]*) log "unknown target $target"; exit 2 ;;
		esac
		start_placementd "$spec" "${flags[@]}"
		urls=$PD_URLS
		if [ -n "$to" ]; then
			# -leader: clients reach only the leader, as through a load
			# balancer that checks /readyz?leader=true (no request takes
			# a follower's forwarding hop); -follower: only one follower,
			# so that every write takes that hop.
			urls=""
			for url in ${PD_URLS//,/ }; do
				if curl -sf -o /dev/null "$url/readyz?leader=true"; then
					[ "$to" = leader ] && urls=$url
				elif [ "$to" = follower ]; then
					urls=$url
				fi
			done
			[ -n "$urls" ] || { log "no node to send $target's clients to"; exit 1; }
		fi
		load "$target" "$urls" "$(IFS=,; echo "${PD_PIDS[*]}")" "$phases"
		stop_placementd
		;;
	*)
		log "unknown target $target"
		exit 2
		;;
	esac
done

echo
echo "N=$NODES compute nodes (numa=$NUMA), C=$CLIENTS clients, $DURATION per phase, limit $LIMIT; upstream and -random: randomize_allocation_candidates on"
echo "$(nproc) cores, load average $LOAD_BEFORE at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
"$WORK/placement-load" table "${REPORTS[@]}"
if [ -n "${REPORT_DIR:-}" ]; then
	mkdir -p "$REPORT_DIR"
	cp "${REPORTS[@]}" "$REPORT_DIR/"
fi
