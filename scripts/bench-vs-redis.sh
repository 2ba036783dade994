#!/usr/bin/env bash
# bench-vs-redis.sh — Zaris against redis-server, side by side on this machine
# (issue #17): the RESP table (redis-benchmark), the native table (zaris-bench
# on both servers), RSS per key (redis-cli --pipe), with server CPU per request.
# Prints markdown tables (the source of docs/BENCHMARKS.md "Zaris vs Redis,
# side by side") on stdout, progress on stderr.
#
# Knobs (environment):
#   ROUNDS=3            interleaved rounds; the tables give medians
#   QUICK=1             one short round (~1 min): a smoke run, not figures to publish
#   TESTS=set,get,incr,lpush,hset  the RESP table's redis-benchmark -t tests
#                       (any of redis-benchmark's; an LRANGE row's server CPU
#                       includes the LPUSH that fills its list)
#   PIPELINES=1,16      the RESP table's -P values
#   SECTIONS=resp,native,memory  (add floor for the I/O-model floor: PING on
#                       Redis, Zaris and test/ablation/cmd/pongfloor)
#
# Usage: scripts/bench-vs-redis.sh > /tmp/vs-redis.md   (or: make bench-redis)
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for tool in redis-server redis-benchmark redis-cli; do
	command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "bench-vs-redis: not found: ${missing[*]}" >&2
	echo "install them with: apt-get install -y redis-server redis-tools   (Debian/Ubuntu)" >&2
	exit 2
fi

GO=${GO:-go}
mkdir -p bin
echo "bench-vs-redis: building bin/zaris-server, bin/zaris-bench, bin/vsredis, bin/pongfloor …" >&2
"$GO" build -o bin/ ./cmd/zaris-server ./cmd/zaris-bench ./test/vsredis/cmd/vsredis ./test/ablation/cmd/pongfloor

args=(-zaris-server bin/zaris-server -zaris-bench bin/zaris-bench
	-redis-server "$(command -v redis-server)" -redis-benchmark "$(command -v redis-benchmark)"
	-redis-cli "$(command -v redis-cli)" -pongfloor bin/pongfloor)
if [ "${QUICK:-0}" = 1 ]; then args+=(-quick); fi
if [ -n "${ROUNDS:-}" ]; then args+=(-rounds "$ROUNDS"); fi
if [ -n "${SECTIONS:-}" ]; then args+=(-sections "$SECTIONS"); fi
if [ -n "${TESTS:-}" ]; then args+=(-tests "$TESTS"); fi
if [ -n "${PIPELINES:-}" ]; then args+=(-pipelines "$PIPELINES"); fi
echo "bench-vs-redis: load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs" >&2
exec bin/vsredis "${args[@]}"
