#!/usr/bin/env bash
# Calls/s and server CPU per call: traces off (A), traces exported over OTLP to a local sink (B),
# plain rmcp (C); rotated A B C, C A B, B C A ... over ROUNDS rounds of SECS seconds each.
set -euo pipefail
R=${R:-target/release}
ROUNDS=${ROUNDS:-5}; SECS=${SECS:-3}
W=$(mktemp -d /tmp/tracesab.XXXX); mkdir -p $W/p; cp $R/libbenchmarks.so $W/p/
python3 "$(dirname "$0")/recv.py" 4390 & SINK=$!
trap 'kill $SINK 2>/dev/null; rm -rf $W' EXIT
start() { # name -> pid, url
  case $1 in
    A) $R/reactor-mcp-server --plugin-dir $W/p --port 4391 --no-watch >/dev/null 2>&1 & echo "$! http://127.0.0.1:4391/mcp?only=benchmarks";;
    B) OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4390 $R/reactor-mcp-server --plugin-dir $W/p --port 4392 --no-watch >/dev/null 2>&1 & echo "$! http://127.0.0.1:4392/mcp?only=benchmarks";;
    C) $R/plain-rmcp-echo --port 4393 >/dev/null 2>&1 & echo "$! http://127.0.0.1:4393/mcp";;
  esac
}
for sessions in 1 16; do
  for r in $(seq $ROUNDS); do
    case $((r % 3)) in 1) order="A B C";; 2) order="C A B";; 0) order="B C A";; esac
    for s in $order; do
      read pid url < <(start $s); sleep 1
      out=$($R/reactor-bench load "$url" --sessions $sessions --seconds $SECS --server-pid $pid 2>&1 | tr '\n' ' ')
      kill $pid; wait $pid 2>/dev/null || true
      echo "sessions=$sessions round=$r $s: $out"
    done
  done
done
