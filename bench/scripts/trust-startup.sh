#!/usr/bin/env bash
# Start-up to the first 200 of GET /toolsets with N copies of a signed release plugin,
# trust off vs --trusted-keys --require-signed (and --locked), alternated; wall-clock time and
# the server's CPU time to that answer.
set -euo pipefail
B=${B:-target/release}
N=${N:-200}
ROUNDS=${ROUNDS:-5}
W=$(mktemp -d /tmp/trustbench.XXXX)
mkdir -p $W/p
for i in $(seq -w 1 $N); do cp $B/libbenchmarks.so $W/p/libbench$i.so; done
$B/reactor-mcp-server keygen --out $W/k >/dev/null 2>&1
$B/reactor-mcp-server sign --key $W/k.key $W/p/*.so >/dev/null 2>&1
$B/reactor-mcp-server lock --plugin-dir $W/p >/dev/null 2>&1
ls -la $(ls $W/p/*.so | head -1) | awk '{print "plugin size", $5}'
start() {
  local port=$((40000 + RANDOM % 20000))
  local t0=$(date +%s%N)
  $B/reactor-mcp-server --plugin-dir $W/p --port $port --no-watch "$@" >/dev/null 2>&1 &
  local pid=$!
  until curl -sf -o /dev/null http://127.0.0.1:$port/toolsets; do sleep 0.001; done
  local t1=$(date +%s%N)
  # utime + stime, in clock ticks (fields 14 and 15; the name in field 2 has no spaces)
  local ticks=$(awk '{print $14 + $15}' /proc/$pid/stat)
  kill $pid; wait $pid 2>/dev/null || true
  echo "$(( (t1 - t0) / 1000000 )) ms (CPU $(( ticks * 1000 / $(getconf CLK_TCK) )) ms)"
}
for r in $(seq $ROUNDS); do
  off=$(start)
  signed=$(start --trusted-keys $W/k.pub --require-signed)
  locked=$(start --trusted-keys $W/k.pub --require-signed --locked)
  echo "round $r: off ${off}, signed ${signed}, signed+locked ${locked}"
done
rm -rf $W
