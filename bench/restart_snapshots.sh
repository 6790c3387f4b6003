#!/usr/bin/env bash
# Restart time with list snapshots against re-matching the whole article log (issue 11):
# on the data of a finished `feedplane load --out DIR` run, starts `feedplane serve`, times
# exec to /readyz answering 200, stops it (SIGTERM), and alternates with the same start
# with DIR/data/lists moved away (the lists re-matched from the log), ROUNDS times.
#   bench/restart_snapshots.sh FEEDPLANE DIR [ROUNDS]
set -euo pipefail
bin=$1 d=$2 rounds=${3:-5}
log=$(mktemp)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -f "$log"' EXIT
# True once GET /readyz on 127.0.0.1:$1 answers 200.
ready() {
  local line
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'GET /readyz HTTP/1.0\r\n\r\n' >&3
  read -r line <&3
  exec 3>&-
  [[ $line == *" 200"* ]]
}
one() {
  local t0 t1 port="" m
  : >"$log"
  t0=$(date +%s.%N)
  "$bin" serve --listen 127.0.0.1:0 --data "$d/data" --config "$d/feedplane.toml" --no-pin >"$log" 2>&1 &
  pid=$!
  while [ -z "$port" ]; do
    port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$log" | cut -d: -f3 || true)
    kill -0 "$pid" || { cat "$log" >&2; exit 1; }
    sleep 0.01
  done
  # Polled with bash's /dev/tcp, not curl: a curl every 10 ms took a third of a core from
  # the start it was timing on a 2-vCPU machine.
  until ready "$port" 2>/dev/null; do sleep 0.01; done
  t1=$(date +%s.%N)
  m=$(curl -s -m 5 "http://127.0.0.1:$port/metrics")
  echo "$1: ready in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}') s; articles matched $(echo "$m" | awk '/^feedplane_reflector_articles_matched_total/ {print $2}'), lists restored $(echo "$m" | awk '/^feedplane_reflector_restored_lists_total/ {print $2}'), subscriptions $(echo "$m" | awk '/^feedplane_reflector_subscriptions / {print $2}')"
  kill "$pid"; wait "$pid" || true; pid=""
}
for _ in $(seq "$rounds"); do
  one snapshots
  mv "$d/data/lists" "$d/data/lists.off"
  one log-only
  rm -rf "$d/data/lists"; mv "$d/data/lists.off" "$d/data/lists"
done
