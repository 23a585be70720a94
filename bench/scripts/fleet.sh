#!/usr/bin/env bash
# Calls/s through HAProxy with 1, 2 and 3 replicas sharing state in Redis, and one replica
# alone without a balancer (BENCHMARKS.md, "A fleet"); then what Redis adds to a task round
# trip (task_roundtrip.py). Needs a release build (`cargo build --release -p reactor-mcp-server
# -p bench --bins`, `cargo build --release -p benchmarks --lib`), the debug fixture-context
# (`cargo build -p fixture-context`), and Debian's redis-server and haproxy.
#
#   bench/scripts/fleet.sh            # SESSIONS (default "1 16"), ROUNDS (3) and SECS (5)
set -euo pipefail
R=${R:-target/release}; D=${D:-target/debug}
ROUNDS=${ROUNDS:-3}; SECS=${SECS:-5}; SESSIONS=${SESSIONS:-1 16}
W=$(mktemp -d /tmp/fleet.XXXX); mkdir -p "$W/p" "$W/c"
cp "$R/libbenchmarks.so" "$W/p/"; cp "$D/libfixture_context.so" "$W/c/"
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT
port=$((30000 + RANDOM % 20000))
redis-server --port "$port" --save "" --appendonly no >/dev/null 2>&1 & pids+=($!)
redis="redis://127.0.0.1:$port"
export REACTOR_MCP_REQUEST_STATE_KEY=fleet-bench-0123456789abcdef0123456789abcdef
replica() { # name port plugin-dir -> pid
  "$R/reactor-mcp-server" --plugin-dir "$3" --port "$2" --no-watch --redis-url "$redis" \
    --replica-id "$1" >/dev/null 2>&1 &
  echo $!
}
ports=()
for i in 1 2 3; do
  ports+=($((port + i))); pids+=("$(replica "r$i" "$((port + i))" "$W/p")")
done
balancer() { # replicas -> port of an HAProxy in front of the first N
  local n=$1 front=$((port + 10 + $1))
  {
    printf 'global\n    log stdout format raw local0 err\ndefaults\n    mode http\n'
    printf '    timeout connect 2s\n    timeout client 1h\n    timeout server 1h\n'
    printf 'frontend mcp\n    bind 127.0.0.1:%s\n    default_backend replicas\n' "$front"
    printf 'backend replicas\n    balance roundrobin\n'
    printf '    stick-table type string len 128 size 100k expire 1h\n'
    printf '    stick store-response res.hdr(mcp-session-id)\n    stick match req.hdr(mcp-session-id)\n'
    for i in $(seq "$n"); do printf '    server r%s 127.0.0.1:%s\n' "$i" "${ports[$((i - 1))]}"; done
  } >"$W/haproxy-$n.cfg"
  haproxy -f "$W/haproxy-$n.cfg" -db >/dev/null 2>&1 & pids+=($!)
  echo "$front"
}
sleep 1
declare -A url
url[alone]="http://127.0.0.1:${ports[0]}/mcp?only=benchmarks"
for n in 1 2 3; do url[haproxy-$n]="http://127.0.0.1:$(balancer "$n")/mcp?only=benchmarks"; done
sleep 1
labels=(alone haproxy-1 haproxy-2 haproxy-3)
for sessions in $SESSIONS; do
  for r in $(seq "$ROUNDS"); do
    for k in 0 1 2 3; do
      label=${labels[$(( (k + r) % 4 ))]}
      out=$("$R/reactor-bench" load "${url[$label]}" --sessions "$sessions" --seconds "$SECS" 2>&1 | tr '\n' ' ')
      echo "sessions=$sessions round=$r $label: $out"
    done
  done
done
a=$((port + 21)); b=$((port + 22))
pa=$(replica ta "$a" "$W/c"); pb=$(replica tb "$b" "$W/c"); pids+=("$pa" "$pb")
sleep 1
python3 "$(dirname "$0")/task_roundtrip.py" "127.0.0.1:$a" "127.0.0.1:$b" "/mcp?context" 200 "$pa"
