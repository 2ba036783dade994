#!/usr/bin/env bash
# bench-ab.sh — two zaris-server binaries side by side (issue #17): the
# redis-benchmark rows of the RESP table, interleaved round by round, with
# each server's CPU per request (/proc/<pid>/stat). For a change to the
# server: build the binary before and after it, then
#
#   scripts/bench-ab.sh /tmp/zaris-before bin/zaris-server
#
# Knobs (environment): ROUNDS=3, TESTS="set incr", PIPELINES="16 1",
# REQUESTS_P16=1000000, REQUESTS_P1=200000. Prints one line per row and round:
# "round R TEST -P P  A: rps cpu_us/op  B: rps cpu_us/op  B/A rps".
set -euo pipefail
if [ $# -ne 2 ]; then echo "usage: $0 OLD_ZARIS_SERVER NEW_ZARIS_SERVER" >&2; exit 2; fi
command -v redis-benchmark >/dev/null || { echo "redis-benchmark not found: apt-get install -y redis-tools" >&2; exit 2; }
A=$1 B=$2
ROUNDS=${ROUNDS:-3} TESTS=${TESTS:-"set incr"} PIPELINES=${PIPELINES:-"16 1"}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run BIN TEST P N: start a fresh node on a kernel-chosen RESP port, load it,
# print "rps cpu_us_per_op".
run() {
	local log port pid t0 t1 rps
	log=$(mktemp)
	"$1" --client-port -1 --resp-port -1 --peer-port -1 --gossip-port -1 --http-port -1 \
		--node-id ab --log-format json --max-item-bytes 512MiB >"$log" 2>&1 &
	pid=$!
	for _ in $(seq 300); do
		port=$(sed -n 's/.*"msg":"node ready".*"resp_addr":"[^"]*:\([0-9]*\)".*/\1/p' "$log" | head -1)
		[ -n "$port" ] && break
		sleep 0.1 # poll interval
	done
	[ -n "$port" ] || { echo "$1 did not start:" >&2; tail -5 "$log" >&2; kill "$pid"; exit 1; }
	t0=$(cpu_ticks "$pid")
	rps=$(redis-benchmark -p "$port" -t "$2" -n "$4" -c 50 -P "$3" -d 32 -r 100000 --csv | tail -1 | cut -d, -f2 | tr -d '"')
	t1=$(cpu_ticks "$pid")
	kill "$pid"; wait "$pid" 2>/dev/null || true
	rm -f "$log"
	echo "$rps $(awk -v a="$t0" -v b="$t1" -v n="$4" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.2f", (b-a)/hz*1e6/n}')"
}

for round in $(seq "$ROUNDS"); do
	for t in $TESTS; do
		for p in $PIPELINES; do
			n=${REQUESTS_P16:-1000000}
			[ "$p" = 1 ] && n=${REQUESTS_P1:-200000}
			if [ $((round % 2)) = 1 ]; then a=$(run "$A" "$t" "$p" "$n"); b=$(run "$B" "$t" "$p" "$n")
			else b=$(run "$B" "$t" "$p" "$n"); a=$(run "$A" "$t" "$p" "$n"); fi
			echo "round $round $t -P $p  A: $a  B: $b  B/A rps $(awk -v x="${a%% *}" -v y="${b%% *}" 'BEGIN{printf "%.2f", y/x}')"
		done
	done
done
