#!/usr/bin/env bash
# Start (or stop) a 3-node Zaris cluster on loopback, for a person to try.
#
#   scripts/cluster.sh start   build bin/zaris-server, start n1..n3 (RF 2, sync) in the background, wait until ready
#   scripts/cluster.sh stop    stop them (SIGTERM, graceful)
#   scripts/cluster.sh status  print /v1/cluster of n1
#
# Ports (node i = 1..3): client 786i, RESP 638(i-1), HTTP 780i, peer 781i,
# gossip 794(5+i). Logs and pids in bin/cluster/. Override the base directory
# with ZARIS_CLUSTER_DIR.
set -euo pipefail

cd "$(dirname "$0")/.."
dir=${ZARIS_CLUSTER_DIR:-bin/cluster}
bin=bin/zaris-server
registry="n1@127.0.0.1:7861:7811:7946:6380:7801,n2@127.0.0.1:7862:7812:7947:6381:7802,n3@127.0.0.1:7863:7813:7948:6382:7803"

stop() {
	# SIGTERM to every node at once, then wait for all: a graceful stop
	# takes each node about as long as one, not three in a row.
	local pids=()
	for i in 1 2 3; do
		pidfile="$dir/n$i.pid"
		if [ -f "$pidfile" ]; then
			pid=$(cat "$pidfile")
			if kill -0 "$pid" 2>/dev/null; then
				kill -TERM "$pid"
				pids+=("$pid")
			fi
			rm -f "$pidfile"
		fi
	done
	for _ in $(seq 1 150); do
		local alive=0
		for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
		[ "$alive" = 0 ] && break
		sleep 0.1
	done
	echo "cluster stopped"
}

start() {
	mkdir -p "$dir" bin
	go build -o "$bin" ./cmd/zaris-server
	for i in 1 2 3; do
		if [ -f "$dir/n$i.pid" ] && kill -0 "$(cat "$dir/n$i.pid")" 2>/dev/null; then
			echo "n$i is already running (pid $(cat "$dir/n$i.pid")); scripts/cluster.sh stop first" >&2
			exit 1
		fi
	done
	for i in 1 2 3; do
		nohup "$bin" --node-id "n$i" --nodes "$registry" --cluster-id local \
			--replication-factor 2 --replication-mode sync \
			--memory-max-bytes 256MiB >"$dir/n$i.log" 2>&1 &
		echo $! >"$dir/n$i.pid"
	done
	for i in 1 2 3; do
		ok=
		for _ in $(seq 1 300); do
			if curl -fsS "http://127.0.0.1:780$i/readyz" >/dev/null 2>&1; then ok=1; break; fi
			if ! kill -0 "$(cat "$dir/n$i.pid")" 2>/dev/null; then break; fi
			sleep 0.1
		done
		if [ -z "$ok" ]; then
			echo "n$i did not become ready; its log:" >&2
			tail -20 "$dir/n$i.log" >&2
			stop
			exit 1
		fi
	done
	cat <<MSG
3-node cluster ready: replication factor 2, sync (every write is on two nodes
before it is acknowledged; one node may die without losing data). Logs in $dir/:
  SDK:        zaris://127.0.0.1:7861,127.0.0.1:7862,127.0.0.1:7863/default
  redis-cli:  redis-cli -c -p 6380
  HTTP:       curl -s http://127.0.0.1:7801/v1/cluster
  stop:       make cluster-stop
MSG
}

case "${1:-start}" in
start) start ;;
stop) stop ;;
status) curl -fsS http://127.0.0.1:7801/v1/cluster ;;
*) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
