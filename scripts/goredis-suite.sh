#!/usr/bin/env bash
# goredis-suite.sh — go-redis's own test suite (the version go.mod pins) as
# a compatibility corpus we did not write: its core specs (Commands, Tx,
# PubSub, Conn, pipelining, ScanIterator, races, pool, Hook; not the
# cluster, ring, sentinel, TLS and Redis Stack module specs) run against
# redis-server and then against a one-node Zaris, and the specs that pass
# on redis-server but fail on Zaris are listed with their failure.
#
# The suite only talks to 127.0.0.1:6379, so that port must be free; it
# needs redis-server and redis-cli (apt-get install -y redis-server
# redis-tools) and the Go module proxy for the suite's own test
# dependencies (ginkgo, gomega).
#
# Usage: scripts/goredis-suite.sh   (or: make compat-goredis)
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in redis-server redis-cli python3; do
	command -v "$tool" >/dev/null || { echo "goredis-suite: $tool not found (apt-get install -y redis-server redis-tools python3)" >&2; exit 2; }
done
if redis-cli -p 6379 ping >/dev/null 2>&1; then
	echo "goredis-suite: something already listens on 6379; the suite needs that port" >&2
	exit 2
fi
GO=${GO:-go}
work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

$GO mod download github.com/redis/go-redis/v9
src=$($GO list -m -f '{{.Dir}}' github.com/redis/go-redis/v9)
ver=$($GO list -m -f '{{.Version}}' github.com/redis/go-redis/v9)
cp -r "$src" "$work/goredis"
chmod -R u+w "$work/goredis"
echo "goredis-suite: building go-redis $ver's tests and zaris-server …" >&2
(cd "$work/goredis" && $GO test -c -o "$work/goredis.test" .)
$GO build -o "$work/zaris-server" ./cmd/zaris-server

wait_up() {
	for _ in $(seq 100); do redis-cli -p 6379 ping >/dev/null 2>&1 && return 0; sleep 0.1; done
	echo "goredis-suite: no server on 6379" >&2
	exit 1
}
run_suite() { # name: the suite against whatever listens on 6379
	(cd "$work/goredis" && RE_CLUSTER=true REDIS_VERSION=7.0 "$work/goredis.test" -test.run TestGinkgoSuite \
		-ginkgo.focus 'Commands|Tx|PubSub|pipelining|ScanIterator|Conn|Cmd|races|pool|withConn|Hook' \
		-ginkgo.skip 'RediSearch|JSON|Timeseries|TS\.|VectorSet|Probabilistic|HotKeys|HIMPORT|FT\.|Cluster|Ring|Sentinel|TLS|Command Tips|Monitor|cluster' \
		-ginkgo.json-report="$work/$1.json" -ginkgo.timeout 13m -ginkgo.no-color >"$work/$1.log" 2>&1) || true
	[ -s "$work/$1.json" ] || { echo "goredis-suite: the suite wrote no report against $1:" >&2; tail -20 "$work/$1.log" >&2; exit 1; }
}

# redis-server as the suite's CI runs it: DEBUG allowed.
redis-server --port 6379 --bind 127.0.0.1 --save '' --appendonly no --enable-debug-command yes --dir "$work" >"$work/redis.log" 2>&1 &
pid=$!
wait_up
redis_version=$(redis-cli -p 6379 info server | tr -d '\r' | awk -F: '/^redis_version/{print $2}')
run_suite redis
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""

"$work/zaris-server" --data-dir "$work/zaris" --resp-port 6379 --client-port -1 --peer-port -1 --gossip-port -1 \
	--http-port -1 >"$work/zaris.log" 2>&1 &
pid=$!
wait_up
run_suite zaris
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""

python3 - "$work/redis.json" "$work/zaris.json" "$ver" "$redis_version" <<'EOF'
import json, sys

def load(path):
    specs = {}
    for suite in json.load(open(path)):
        for s in suite.get("SpecReports") or []:
            name = " ".join(s.get("ContainerHierarchyTexts") or []) + " :: " + s.get("LeafNodeText", "")
            failure = (s.get("Failure") or {}).get("Message", "")
            specs[name] = (s["State"], " ".join(failure.split())[:160])
    return specs

redis, zaris = load(sys.argv[1]), load(sys.argv[2])
ran = lambda d: [k for k, v in d.items() if v[0] != "skipped"]
passed = lambda d: [k for k, v in d.items() if v[0] == "passed"]
print(f"go-redis {sys.argv[3]} suite (core specs), redis-server {sys.argv[4]} vs zaris-server:\n")
print("| server | specs run | passed | failed |")
print("|---|---|---|---|")
for name, d in (("redis-server", redis), ("zaris-server", zaris)):
    print(f"| {name} | {len(ran(d))} | {len(passed(d))} | {len(ran(d)) - len(passed(d))} |")
only = sorted(k for k, v in zaris.items() if v[0] not in ("passed", "skipped") and redis.get(k, ("",))[0] == "passed")
print(f"\nPassing on redis-server, failing on Zaris ({len(only)}):\n")
for k in only:
    print(f"- {k}: {zaris[k][1]}")
EOF
