#!/usr/bin/env bash
# Makes the data of a restart with a long article log, for bench/restart_cpu.sh: a farm of
# FEEDS feeds (default 10,000), each changing at every fetch, crawled by `feedplane serve
# --shards 2` every second for SECONDS (default 180; ~5,000 articles a second on a 2-vCPU
# VM) with SUBS (default 1,000) one-word subscriptions, then stopped cleanly (every list
# snapshotted).
# DIR/feedplane.toml sets the recent window ([reflector] backfill_window_s) to WINDOW
# seconds (default 600): once the crawl is older than that, a start needs none of the log
# but what came after the snapshots. The farm is stopped at the end, so the restarts'
# fetches fail at once (their sources do not resolve) and cost little.
#   bench/restart_log.sh FEEDPLANE DIR        then, alternating binaries:
#   bench/restart_cpu.sh FEEDPLANE DIR
# GC=S sets [reflector] article_gc_interval_s (default: the product's, an hour): with a
# short WINDOW it shows the article log's collection; every 30 s the script prints the
# articles sequenced and stored, the article files' bytes and the store's size on disk.
set -euo pipefail
bin=$1 d=$2
feeds=${FEEDS:-10000} secs=${SECONDS_CRAWL:-180} window=${WINDOW:-600} gc=${GC:-}
subs=${SUBS:-1000}
mkdir -p "$d"
rm -rf "$d/data" "$d"/opml.*
farm_pid="" pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; [ -n "$farm_pid" ] && kill "$farm_pid" 2>/dev/null; true' EXIT
export FEEDPLANE_ADMIN_TOKEN=restart-log-bench
auth="Authorization: Bearer $FEEDPLANE_ADMIN_TOKEN"
: >"$d/farm.out"
"$bin" farm --feeds "$feeds" --seed 1 --listen 127.0.0.1:0 --change-share 1 --feed-bytes 8192 \
  --addresses 16 --opml "$d/feeds.opml" --pins "$d/pins.txt" >"$d/farm.out" 2>"$d/farm.log" &
farm_pid=$!
until grep -q '^farm: listening' "$d/farm.out"; do
  kill -0 "$farm_pid" || { cat "$d/farm.log" >&2; exit 1; }
  sleep 0.2
done
grep '<outline' "$d/feeds.opml" | split -l 2000 - "$d/opml."
for f in "$d"/opml.??; do
  { echo '<?xml version="1.0"?><opml version="2.0"><body>'; cat "$f"; echo '</body></opml>'; } >"$f.xml"
  rm "$f"
done
# The farm's host names pinned to its loopback addresses in the config itself, so the
# restarts (bench/restart_cpu.sh passes no --resolve-file) send nothing past loopback.
python3 - "$window" "$d/pins.txt" "$gc" >"$d/feedplane.toml" <<'PY'
import json, sys
print("[crawler]\nmin_interval_s = 1\nmax_interval_s = 1\nper_domain_rate = 0")
print("per_domain_connections = 1024\nmax_in_flight = 1024")
print(f"[reflector]\nbackfill_window_s = {sys.argv[1]}")
if sys.argv[3]:
    print(f"article_gc_interval_s = {sys.argv[3]}")
pins = [l.strip() for l in open(sys.argv[2]) if l.strip()]
print("[net]\nresolve = [" + ", ".join(json.dumps(p) for p in pins) + "]")
PY
"$bin" serve --config "$d/feedplane.toml" --listen 127.0.0.1:0 --data "$d/data" --shards 2 \
  >"$d/serve.log" 2>&1 &
pid=$!
port=""
until [ -n "$port" ]; do
  kill -0 "$pid" || { cat "$d/serve.log" >&2; exit 1; }
  sleep 0.1
  port=$(grep -o 'http://127.0.0.1:[0-9]*' "$d/serve.log" | head -1 | cut -d: -f3 || true)
done
base=http://127.0.0.1:$port
until [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")" = 200 ]; do sleep 0.1; done
python3 -c "
import json
words = ['the', 'time', 'people', 'world', 'news']
for i in range($subs):
    print(json.dumps({'account': f'rl-{i // 100}', 'query': words[i % 5], 'backfill': False}))" >"$d/bulk.jsonl"
rm -f "$d"/bulk.part.*
split -l 10000 "$d/bulk.jsonl" "$d/bulk.part."  # the server's max_body is 1 MiB
for f in "$d"/bulk.part.*; do
  curl -sf -H "$auth" --data-binary @"$f" "$base/api/subscriptions:bulk" >/dev/null
done
for f in "$d"/opml.*.xml; do
  curl -sf -o /dev/null -H "$auth" -H 'Content-Type: text/x-opml' --data-binary @"$f" "$base/api/sources:import"
done
metric() { curl -s "$base/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
for ((t = 30; t <= secs; t += 30)); do
  sleep 30
  echo "restart_log: ${t} s: $(metric feedplane_store_articles_sequenced_total) sequenced," \
    "$(metric feedplane_store_articles_stored) stored, article files" \
    "$(($(metric feedplane_store_article_bytes) >> 20)) MiB, store $(du -sm "$d/data/db" | cut -f1) MiB"
done
sleep $((secs % 30))
articles=$(curl -s "$base/metrics" | awk '$1 == "feedplane_store_articles_sequenced_total" { print $2 }')
kill "$pid"
wait "$pid" || true
pid=""
kill "$farm_pid"
wait "$farm_pid" 2>/dev/null || true
farm_pid=""
echo "restart_log: $articles articles in the log, store $(du -sm "$d/data/db" | cut -f1) MiB, recent window $window s: $d"
