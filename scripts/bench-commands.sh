#!/usr/bin/env bash
# bench-commands.sh — per-command rate of Zaris against redis-server on the
# same machine (issue #17): every redis-benchmark default test (-t), and a
# list of commands on large values (a 100 k-element list, set, sorted set
# and hash, a 1 MB string, 100 k string keys), where a command whose cost
# grows with the collection while Redis's does not shows up as a ratio near
# zero. Prints markdown tables on stdout (docs/BENCHMARKS.md, "Per command"),
# progress on stderr.
#
# Knobs (environment): ROUNDS=1 (interleaved; the table gives medians),
# PIPELINE=16, CLIENTS=50, REQUESTS=200000 (the -t rows; the command rows
# use a tenth), ZARIS=bin/zaris-server (built when absent).
#
# Usage: scripts/bench-commands.sh > /tmp/commands.md   (or: make bench-commands)
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in redis-server redis-benchmark redis-cli python3; do
	command -v "$tool" >/dev/null || { echo "bench-commands: $tool not found (apt-get install -y redis-server redis-tools python3)" >&2; exit 2; }
done
ROUNDS=${ROUNDS:-1} PIPELINE=${PIPELINE:-16} CLIENTS=${CLIENTS:-50} REQUESTS=${REQUESTS:-200000}
ZARIS=${ZARIS:-bin/zaris-server}
if [ ! -x "$ZARIS" ] || [ "$ZARIS" = bin/zaris-server ]; then
	echo "bench-commands: building bin/zaris-server …" >&2
	${GO:-go} build -o bin/ ./cmd/zaris-server
fi
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

RPORT=$(free_port)
redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no >"$work/redis.log" 2>&1 &
RPID=$!
pids+=("$RPID")
ZPORT=$(free_port)
"$ZARIS" --data-dir "$work/zaris" --resp-port "$ZPORT" --client-port -1 --peer-port -1 --gossip-port -1 \
	--http-port -1 --max-item-bytes 512MiB >"$work/zaris.log" 2>&1 &
ZPID=$!
pids+=("$ZPID")
for port in "$RPORT" "$ZPORT"; do
	for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done # poll until it answers
	redis-cli -p "$port" ping >/dev/null || { echo "bench-commands: no server on port $port" >&2; tail "$work"/*.log >&2; exit 1; }
done

# rate PORT PID ARGS…: "rps cpu_us_per_op" of one redis-benchmark run.
rate() {
	local port=$1 pid=$2 n=$3 t0 t1 rps
	shift 3
	t0=$(cpu_ticks "$pid")
	rps=$(redis-benchmark -p "$port" -c "$CLIENTS" -P "$PIPELINE" -n "$n" -d 32 -r 100000 --csv "$@" 2>/dev/null | tail -1 | cut -d, -f2 | tr -d '"')
	t1=$(cpu_ticks "$pid")
	awk -v r="${rps:-0}" -v a="$t0" -v b="$t1" -v n="$n" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%s %.2f", r, (b-a)/hz*1e6/n}'
}

# median COLUMN: the median of that column of the row's rounds.
median() { cut -d' ' -f"$1" "$work/row" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }

# row NAME N ARGS…: one table row over ROUNDS interleaved rounds (medians).
row() {
	local name=$1 n=$2 r z
	shift 2
	: >"$work/row"
	for round in $(seq "$ROUNDS"); do
		if [ $((round % 2)) = 1 ]; then r=$(rate "$RPORT" "$RPID" "$n" "$@"); z=$(rate "$ZPORT" "$ZPID" "$n" "$@")
		else z=$(rate "$ZPORT" "$ZPID" "$n" "$@"); r=$(rate "$RPORT" "$RPID" "$n" "$@"); fi
		echo "$r $z" >>"$work/row"
	done
	local rr rc zr zc
	rr=$(median 1) rc=$(median 2) zr=$(median 3) zc=$(median 4)
	awk -v name="$name" -v rr="$rr" -v rc="$rc" -v zr="$zr" -v zc="$zc" \
		'BEGIN{printf "| `%s` | %.0f | %.0f | **%.2f** | %.2f | %.2f |\n", name, rr, zr, (rr > 0 ? zr / rr : 0), rc, zc}'
	echo "bench-commands: $name done" >&2
}

header() {
	echo
	echo "| $1 | Redis req/s | Zaris req/s | Zaris / Redis | Redis µs CPU/req | Zaris µs CPU/req |"
	echo "|---|---|---|---|---|---|"
}

echo "bench-commands: load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs; -c $CLIENTS -P $PIPELINE, $ROUNDS round(s)" >&2
echo "### redis-benchmark tests (-c $CLIENTS -P $PIPELINE -d 32 -r 100000, one server each for the whole table)"
header "test"
for t in ping_inline ping_mbulk set get incr lpush rpush lpop rpop sadd hset spop zadd zpopmin lrange_100 lrange_300 lrange_500 lrange_600 mset; do
	n=$REQUESTS
	case $t in lrange_*) n=$((REQUESTS / 10)) ;; esac
	row "$t" "$n" -t "$t"
done

echo "bench-commands: loading large values …" >&2
for port in "$RPORT" "$ZPORT"; do
	redis-benchmark -p "$port" -t lpush,sadd,zadd,hset -n 300000 -c 50 -P 16 -r 100000 -q >/dev/null
	redis-benchmark -p "$port" -t set -n 300000 -c 50 -P 50 -r 100000 -q >/dev/null
	redis-cli -p "$port" setrange bigstr 1000000 x >/dev/null
done
echo
echo "### Commands on large values (mylist, myset, myzset, myhash: ~100 k elements; bigstr: 1 MB; 100 k string keys)"
header "command"
n=$((REQUESTS / 10))
while IFS= read -r cmd; do
	[ -z "$cmd" ] && continue
	# shellcheck disable=SC2086 # the command's words are separate arguments
	row "$cmd" "$n" $cmd
done <<'EOF'
lindex mylist 0
lindex mylist -1
lindex mylist 50000
lrange mylist 0 9
llen mylist
lset mylist -1 x
srandmember myset
srandmember myset -5
srandmember myset 5
spop myset
sismember myset element:000000050000
scard myset
sscan myset 0 count 10
zrandmember myzset
zrandmember myzset -5
zrandmember myzset 5
zscore myzset element:000000050000
zrank myzset element:000000050000
zrange myzset 0 9
zrevrange myzset 0 9
zrangebyscore myzset 500 600 limit 0 5
zcount myzset 500 60000
zlexcount myzset - +
zincrby myzset 1 element:000000050000
zscan myzset 0 count 10
hrandfield myhash
hrandfield myhash -5
hrandfield myhash 5
hget myhash element:000000050000
hlen myhash
hscan myhash 0 count 10
getrange bigstr 0 10
setrange bigstr 100 abc
bitfield bigstr INCRBY u8 #50000 1
getbit bigstr 4000000
bitcount bigstr 1000 2000
append bigstr xxxxxxxxxxxxxxxx
strlen bigstr
randomkey
dbsize
scan 0 count 10
type myzset
memory usage myzset
EOF
