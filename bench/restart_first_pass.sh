#!/usr/bin/env bash
# What a restart leaves for the index's upkeep (issue 11's tail): on a copy of the data of a
# finished `feedplane load --out DIR` run, starts `feedplane serve`, times exec to /readyz
# 200, then waits until every shard ended its first upkeep pass and prints what that pass
# re-filed (GET /api/match-stats) and when it ended. Clauses re-filed there were filed off
# their rarest word until then. With NOWORDS=1 the copy loses its words files
# (lists/shard-*.words), as after a crash before the first snapshot round or with data
# written before 58ed6d3. The copy is made afresh each time, so runs can alternate binaries.
#   [NOWORDS=1] bench/restart_first_pass.sh FEEDPLANE DIR
set -euo pipefail
. "$(dirname "$0")/serve_port.sh"
bin=$1 d=$2
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
cp -a "$d/data" "$work/data"
[ "${NOWORDS:-0}" = 1 ] && rm -f "$work"/data/lists/*.words
words=$({ find "$work/data/lists" -name '*.words' 2>/dev/null || true; } | wc -l)
token=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
t0=$(date +%s.%N)
# The farm's pins keep the crawler's host names on loopback (its farm is not running: the
# fetches fail, which changes nothing here).
FEEDPLANE_ADMIN_TOKEN=$token "$bin" serve --listen 127.0.0.1:0 --data "$work/data" \
  --config "$d/feedplane.toml" --resolve-file "$d/pins.txt" --no-pin >"$work/log" 2>&1 &
pid=$!
port=$(serve_port "$work/log" "$pid")
until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 200 ]; do
  sleep 0.01
done
t1=$(date +%s.%N)
summary=""
for _ in $(seq 6000); do
  summary=$(curl -s -H "Authorization: Bearer $token" "http://127.0.0.1:$port/api/match-stats" |
    python3 -c 'import json, sys
d = json.load(sys.stdin)["shards"]
if min(s["upkeep_passes"] for s in d) >= 1:
    print("re-filed by shard", [s["refiled"] for s in d], "passes", [s["upkeep_passes"] for s in d])' \
    2>/dev/null || true)
  [ -n "$summary" ] && break
  sleep 0.02
done
t2=$(date +%s.%N)
echo "ready in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}') s; first upkeep pass on every shard ended $(awk -v a="$t1" -v b="$t2" 'BEGIN {printf "%.2f", b - a}') s after ready; ${summary:-no pass ended within 120 s}; words files: $words"
