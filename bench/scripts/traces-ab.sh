#!/usr/bin/env bash
# Calls/s and server CPU per call: traces off (A), traces exported over OTLP to a local sink (B),
# plain rmcp (C), in one run (bench/scripts/ab.sh rotates them each round).
set -euo pipefail
here=$(dirname "$0")
python3 "$here/recv.py" 4390 & SINK=$!
trap 'kill $SINK 2>/dev/null' EXIT
"$here/ab.sh" A= B=OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4390 C=plain
