#!/usr/bin/env bash
# One start and clean stop of `feedplane serve` on the data of a finished `feedplane load
# --out DIR` run: waits for /readyz to answer 200, then 0.5 s, sends SIGTERM and prints the
# seconds until the process exits (the stop writes the list snapshots its partitions still
# owe, and flushes the store). Run it alternately with two binaries to compare them.
#   bench/stop_time.sh FEEDPLANE DIR
set -euo pipefail
bin=$1 d=$2
log=$(mktemp)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -f "$log"' EXIT
"$bin" serve --listen 127.0.0.1:0 --data "$d/data" --config "$d/feedplane.toml" --no-pin >"$log" 2>&1 &
pid=$!
port=""
while [ -z "$port" ]; do
  port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$log" | cut -d: -f3 || true)
  kill -0 "$pid" || { cat "$log" >&2; exit 1; }
  sleep 0.01
done
until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 200 ]; do
  sleep 0.05
done
sleep 0.5
t0=$(date +%s.%N)
kill "$pid"
wait "$pid" || true
t1=$(date +%s.%N)
pid=""
echo "stop in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}') s"
