#!/usr/bin/env bash
# Calls/s and server CPU per call of several servers in one run, each round in another order
# (so none always goes first on a noisy machine).
#
#   bench/scripts/ab.sh 'A=--policy /tmp/none.toml' 'B=--isolate benchmarks' C=plain
#
# Each argument is LABEL=ARGS: a release host serving the release `benchmarks` plugin with
# these extra arguments (an `ENV=value` word before them sets a variable; a first word `@PATH`
# runs the host binary at PATH instead, to compare two builds), or LABEL=plain for plain rmcp's
# echo server. SESSIONS (default "1 16"), ROUNDS (5) and SECS (3) say how long; MODE=json
# runs every server `--stateless` and loads it with JSON answers (default: sse, sessions).
set -euo pipefail
R=${R:-target/release}
ROUNDS=${ROUNDS:-5}; SECS=${SECS:-3}; SESSIONS=${SESSIONS:-1 16}; MODE=${MODE:-sse}
stateless=(); [ "$MODE" = json ] && stateless=(--stateless)
W=$(mktemp -d /tmp/ab.XXXX); mkdir -p "$W/p"; cp "$R/libbenchmarks.so" "$W/p/"
trap 'rm -rf "$W"' EXIT
labels=(); commands=()
for variant in "$@"; do labels+=("${variant%%=*}"); commands+=("${variant#*=}"); done
n=${#labels[@]}
start() { # index port -> "pid url"
  local command=${commands[$1]} port=$2
  if [ "$command" = plain ]; then
    "$R/plain-rmcp-echo" --port "$port" "${stateless[@]}" >/dev/null 2>&1 &
    echo "$! http://127.0.0.1:$port/mcp"
  else
    local env=() args=() host="$R/reactor-mcp-server"
    for word in $command; do
      if [ ${#args[@]} = 0 ] && [[ $word == @* ]]; then host=${word#@}
      elif [ ${#args[@]} = 0 ] && [[ $word == [A-Z]*=* ]]; then env+=("$word"); else args+=("$word"); fi
    done
    env "${env[@]}" "$host" --plugin-dir "$W/p" --port "$port" --no-watch \
      "${stateless[@]}" "${args[@]}" >/dev/null 2>&1 &
    echo "$! http://127.0.0.1:$port/mcp?only=benchmarks"
  fi
}
# A fresh port for each start: a port just closed may still be held (TIME-WAIT).
port=$((30000 + RANDOM % 20000))
for sessions in $SESSIONS; do
  for r in $(seq "$ROUNDS"); do
    for k in $(seq 0 $((n - 1))); do
      i=$(( (k + r) % n ))
      port=$((port + 1))
      read -r pid url < <(start "$i" "$port")
      sleep 1
      out=$("$R/reactor-bench" load "$url" --mode "$MODE" --sessions "$sessions" --seconds "$SECS" \
        --server-pid "$pid" 2>&1 | tr '\n' ' ')
      kill "$pid"; wait "$pid" 2>/dev/null || true
      echo "sessions=$sessions round=$r ${labels[$i]}: $out"
    done
  done
done
