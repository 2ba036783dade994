#!/usr/bin/env bash
# redis-benchmark-all.sh — every redis-benchmark test (-t) against a
# redis-server and a single Zaris node, side by side in one session
# (issue #13: "redis-benchmark on every -t test: Zaris/Redis ratio").
#
# For each round, pipeline depth and test, the two servers run one after
# the other (the order alternates between rounds), so both meet the same
# machine load; the table reports each test's median requests/s over the
# rounds and the Zaris/Redis ratio of the medians. Any error reply printed
# by redis-benchmark fails the run: every test must succeed on Zaris.
#
# Usage: scripts/redis-benchmark-all.sh [OUT_DIR]
#   ROUNDS (3), REQUESTS (100000), CLIENTS (50), PIPELINES ("1 16"),
#   TESTS (every test of redis-benchmark 7.0's default list, which has no XADD:
#   its XADD test came with 7.2).
# Needs redis-server and redis-benchmark on PATH and Go to build the node.
set -euo pipefail

cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-100000}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-"1 16"}
TESTS=${TESTS:-"ping_inline ping_mbulk set get incr lpush rpush lpop rpop sadd hset spop zadd zpopmin lrange_100 lrange_300 lrange_500 lrange_600 mset"}
OUT=${1:-$(mktemp -d /tmp/redis-benchmark-all.XXXXXX)}
mkdir -p "$OUT"

go build -o bin/zaris-server ./cmd/zaris-server

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# A port the kernel hands out now (redis-server takes no "any port" option
# for TCP); the instant between the probe and redis-server's bind is the
# only race, and a failed bind stops the run.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

redis_port=$(free_port)
redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no \
	--dir "$OUT" >"$OUT/redis-server.log" 2>&1 &
pids+=($!)

# redis-benchmark's LPUSH/RPUSH tests and the LPUSH that precedes each
# LRANGE_* test push 100 000 elements of 3 bytes each onto one list
# ("mylist"): a round (both pipeline depths) takes it to about 800 000
# elements, 4.0 MB of item size (5 bytes an element, DECISIONS D52) — just
# under Zaris's default per-key cap of 4 MiB (--max-item-bytes). The node
# runs with a 64 MiB cap so that a larger REQUESTS fits too.
./bin/zaris-server --node-id bench --bind 127.0.0.1 --resp-port -1 --client-port -1 --peer-port -1 \
	--gossip-port -1 --http-port 0 --max-item-bytes 64MiB >"$OUT/zaris-server.log" 2>&1 &
pids+=($!)

zaris_port=""
for _ in $(seq 100); do
	zaris_port=$(grep -o 'resp_addr=[0-9.]*:[0-9]*' "$OUT/zaris-server.log" | head -1 | sed 's/.*://' || true)
	[ -n "$zaris_port" ] && redis-cli -p "$zaris_port" PING >/dev/null 2>&1 && break
	sleep 0.1
done
for _ in $(seq 100); do
	redis-cli -p "$redis_port" PING >/dev/null 2>&1 && break
	sleep 0.1
done
[ -n "$zaris_port" ] || { echo "the Zaris node did not start: $OUT/zaris-server.log" >&2; exit 1; }
redis-cli -p "$redis_port" PING >/dev/null || { echo "redis-server did not start: $OUT/redis-server.log" >&2; exit 1; }

echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on :$redis_port, Zaris on :$zaris_port; out $OUT"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
echo "load_before $(cut -d' ' -f1-3 /proc/loadavg)" >"$OUT/load.txt"

: >"$OUT/results.tsv" # round  pipeline  server  test  rps
errors=0
run() { # server port pipeline test round
	local name=$1 port=$2 p=$3 t=$4 r=$5 log="$OUT/$1-P$3-$4-r$5"
	redis-benchmark -p "$port" -c "$CLIENTS" -n "$REQUESTS" -P "$p" -t "$t" --csv >"$log.csv" 2>"$log.err" || {
		echo "redis-benchmark failed on $name ($t, P$p): $log.err" >&2
		errors=$((errors + 1))
	}
	if grep -qi 'error' "$log.err" "$log.csv"; then
		echo "error replies from $name ($t, P$p):" >&2
		head -3 "$log.err" "$log.csv" >&2
		errors=$((errors + 1))
	fi
	# The csv's last row is the test itself (lrange_* first print the LPUSH
	# that fills the list): "LRANGE_100 (first 100 elements)","rps",…
	local rps
	rps=$(tail -1 "$log.csv" | cut -d, -f2 | tr -d '"')
	case $rps in
	'' | *[!0-9.]*)
		echo "no result from $name ($t, P$p): $log.csv" >&2
		errors=$((errors + 1))
		rps=""
		;;
	esac
	printf '%s\t%s\t%s\t%s\t%s\n' "$r" "$p" "$name" "$t" "$rps" >>"$OUT/results.tsv"
}

for r in $(seq "$ROUNDS"); do
	# Each round starts from empty key spaces on both servers.
	redis-cli -p "$redis_port" FLUSHALL >/dev/null
	redis-cli -p "$zaris_port" FLUSHALL >/dev/null
	for p in $PIPELINES; do
		for t in $TESTS; do
			if [ $((r % 2)) -eq 1 ]; then
				run redis "$redis_port" "$p" "$t" "$r"
				run zaris "$zaris_port" "$p" "$t" "$r"
			else
				run zaris "$zaris_port" "$p" "$t" "$r"
				run redis "$redis_port" "$p" "$t" "$r"
			fi
		done
	done
	echo "round $r done; load $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo "load_after $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/load.txt"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

# Median requests/s per (pipeline, test, server) and the ratio.
python3 - "$OUT/results.tsv" "$TESTS" "$PIPELINES" <<'EOF' | tee "$OUT/table.md"
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
tests, pipes = sys.argv[2].split(), sys.argv[3].split()
med = {}
for key in {(p, t, s) for _, p, s, t, _ in rows}:
    vals = [float(v) for _, p, s, t, v in rows if (p, t, s) == key and v]
    med[key] = statistics.median(vals) if vals else 0.0
head = "| test |" + "".join(f" Redis P{p} (req/s) | Zaris P{p} (req/s) | Zaris/Redis P{p} |" for p in pipes)
print(head)
print("|---|" + "---:|" * (3 * len(pipes)))
for t in tests:
    cells = []
    for p in pipes:
        r, z = med.get((p, t, "redis"), 0), med.get((p, t, "zaris"), 0)
        cells += [f"{r:,.0f}", f"{z:,.0f}", f"{z / r:.2f}" if r else "–"]
    print(f"| {t} | " + " | ".join(cells) + " |")
EOF

if [ "$errors" -ne 0 ]; then
	echo "$errors test runs failed or printed error replies (see $OUT)" >&2
	exit 1
fi
