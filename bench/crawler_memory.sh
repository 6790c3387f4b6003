#!/usr/bin/env bash
# Resident memory per feed of `feedplane serve` (issue 10: <= 1 KiB per feed at 1M feeds
# with 10-20 entries each, everything included). Runs a farm of FEEDS feeds on loopback
# (`feedplane farm`, paused: its initial documents, 10-17 entries typical), a feedplane with
# them imported through OPML, waits until every source was fetched once, and prints VmRSS
# before the import (no sources) and after; then restarts feedplane on the same data and
# prints VmRSS once the sources are loaded from the store (no fetch is due for an hour).
# max_in_flight is 256 per shard: the farm is one loop on a shared machine, and thousands
# of fetches queued at it would time out (5 s) rather than fetch.
#   bench/crawler_memory.sh FEEDPLANE FEEDS [SHARDS]    (OUT=dir keeps the files;
#   FARM_ARGS adds options to the farm; note --hosts FILE only seeds its host names: a
#   100k-feed farm still had 95k hosts with a 1,000-line file; MEMTABLE_MB sets
#   [server] memtable_mb, unset: the product's default)
set -euo pipefail
bin=$1 feeds=$2 shards=${3:-2}
tmp=${OUT:-$(mktemp -d)}
mkdir -p "$tmp"
farm_pid="" pid=""
cleanup() {
  [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  [ -n "$farm_pid" ] && { kill "$farm_pid" 2>/dev/null || true; wait "$farm_pid" 2>/dev/null || true; }
  [ -z "${OUT:-}" ] && rm -rf "$tmp"
}
trap cleanup EXIT
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }

"$bin" farm --feeds "$feeds" --listen 127.0.0.1:0 --start-paused --opml "$tmp/feeds.opml" ${FARM_ARGS:-} \
  --pins "$tmp/pins.txt" >"$tmp/farm.out" 2>"$tmp/farm.log" &
farm_pid=$!
until grep -q 'farm: listening' "$tmp/farm.out"; do
  kill -0 "$farm_pid" 2>/dev/null || { echo "farm exited" >&2; cat "$tmp/farm.log" >&2; exit 1; }
  sleep 1
done
cat >"$tmp/feedplane.toml" <<TOML
[crawler]
min_interval_s = 3600
max_interval_s = 86400
per_domain_rate = 0
per_domain_connections = 4
max_in_flight = 256
TOML
[ -n "${MEMTABLE_MB:-}" ] && printf '[server]\nmemtable_mb = %s\n' "$MEMTABLE_MB" >>"$tmp/feedplane.toml"
export FEEDPLANE_ADMIN_TOKEN=memory-bench-token
auth="Authorization: Bearer $FEEDPLANE_ADMIN_TOKEN"
runs=0
start() {
  runs=$((runs + 1))
  log="$tmp/serve.$runs.log"  # one per start: MIMALLOC_SHOW_STATS=1 prints at exit
  "$bin" serve --config "$tmp/feedplane.toml" --listen 127.0.0.1:0 --data "$tmp/data" \
    --shards "$shards" --no-pin --resolve-file "$tmp/pins.txt" >"$log" 2>&1 &
  pid=$!
  port=""
  until [ -n "$port" ]; do
    kill -0 "$pid" 2>/dev/null || { echo "serve exited" >&2; tail "$log" >&2; exit 1; }
    sleep 0.2
    port=$(grep -o 'http://127.0.0.1:[0-9]*' "$log" 2>/dev/null | head -1 | cut -d: -f3 || true)
  done
  base="http://127.0.0.1:$port"
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")" = 200 ]; do sleep 0.5; done
}
metric() {
  curl -s "$base/metrics" | awk -v m="$1" '$1 == m || index($1, m "{") == 1 { s += $2 } END { printf "%d\n", s + 0 }'
}

start
sleep 2
rss0=$(rss_kib "$pid")
echo "feedplane with no sources: VmRSS $rss0 KiB"
# OPML in documents of 2,000 outlines (the request body limit).
grep '<outline' "$tmp/feeds.opml" | split -l 2000 - "$tmp/opml."
for f in "$tmp"/opml.*; do
  { echo '<?xml version="1.0"?><opml version="2.0"><body>'; cat "$f"; echo '</body></opml>'; } >"$f.xml"
  code=$(curl -s -o "$tmp/import.out" -w '%{http_code}' -H "$auth" -H 'Content-Type: text/x-opml' \
    --data-binary @"$f.xml" "$base/api/sources:import")
  [ "$code" = 200 ] || [ "$code" = 201 ] || { echo "import: $code $(cat "$tmp/import.out")" >&2; exit 1; }
  rm -f "$f" "$f.xml"
done
echo "imported: $(metric feedplane_crawler_sources) sources"
until [ "$(metric feedplane_crawler_fetches_total)" -ge "$feeds" ] &&
  [ "$(metric feedplane_crawler_fetches_in_flight)" -eq 0 ]; do
  sleep 5
  echo "  fetched $(metric feedplane_crawler_fetches_total) of $feeds, VmRSS $(rss_kib "$pid") KiB, memtables $(( $(metric feedplane_store_memtable_bytes) / 1024 )) KiB" >&2
done
# Idle connections close after 30 s and idle politeness keys go once a minute: the
# figure is taken 90 s after the last fetch (and 10 s after, for the transient).
sleep 10
echo "10 s after the last fetch: VmRSS $(rss_kib "$pid") KiB"
sleep 80
rss1=$(rss_kib "$pid")
echo "fetches by result:"; curl -s "$base/metrics" | grep '^feedplane_crawler_fetches_total' || true
echo "articles: $(metric feedplane_crawler_articles_total)"
echo "feedplane with $feeds sources fetched once: VmRSS $rss1 KiB"
# Of VmRSS: what the kernel may still take back (MADV_FREE: LazyFree) and what sits on
# transparent huge pages (the allocator never returns their free pages).
echo "  $(awk '/^(Anonymous|LazyFree|AnonHugePages):/ { printf "%s %s KiB  ", $1, $2 }' "/proc/$pid/smaps_rollup")"
echo "  of which the store's memtables: $(( $(metric feedplane_store_memtable_bytes) / 1024 )) KiB"
echo "  schedule entries: $(metric feedplane_crawler_schedule_entries) (one per source, plus stale ones)"
# Not per feed: what the reflectors keep of the articles the fetch produced (the backfill
# window's word index, 8 bytes a posting, and the article cache, bounded by its budget).
echo "  the reflectors' backfill window: $(metric feedplane_reflector_recent_articles) articles (summed over shards), $(metric feedplane_reflector_recent_postings) postings"
echo "  the reflectors' article cache: $(( $(metric feedplane_reflector_article_cache_bytes) / 1024 )) KiB, render cache $(( $(metric feedplane_reflector_render_cache_bytes) / 1024 )) KiB"
echo "per feed: $(( (rss1 - rss0) * 1024 / feeds )) bytes"
kill "$pid"; wait "$pid" || true; pid=""
start
sleep 5
rss2=$(rss_kib "$pid")
echo "after a restart, $(metric feedplane_crawler_sources) sources loaded from the store: VmRSS $rss2 KiB"
echo "  of which the store's memtables: $(( $(metric feedplane_store_memtable_bytes) / 1024 )) KiB"
echo "per feed after the restart: $(( (rss2 - rss0) * 1024 / feeds )) bytes"
