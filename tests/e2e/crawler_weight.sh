#!/usr/bin/env bash
# The weight feedback inside `feedplane serve --shards 2` (issue 10): a feed's weight in the
# fetch budget is 1 + the subscriptions one of its recent articles matched. nginx serves two
# feeds (as in crawler_budget.sh): every article of `hot` matches the N subscriptions made
# through the admin bulk route, which sit on both shards (their feed tokens name their
# partitions, so the test knows), so the counts cross shards on their way to hot's crawler;
# no subscription matches `cold`. Checks:
#   - hot's status shows weight 1 + N (matches 3N over its 3 articles), cold's stays 1;
#   - the metrics of the reports sent (one per shard at least) and applied;
#   - after a crash (kill -9: no list snapshot, so the shards re-match the whole log) and a
#     restart the weight is the same: persisted with the crawl record, and the replayed
#     articles are not counted a second time.
# Reports every second ([reflector] weight_report_interval_s = 1), so it takes seconds.
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
chmod 755 "$tmp"  # nginx's workers run as another user when started by root
pid=""
ngx=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  if [ -n "$ngx" ]; then kill "$ngx" 2>/dev/null || true; wait "$ngx" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  [ -f "$tmp/serve.log" ] && tail -20 "$tmp/serve.log" >&2
  exit 1
}
command -v nginx >/dev/null || fail "nginx is not installed (scripts/setup installs it)"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

mkdir -p "$tmp/feeds"
{
  echo '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>hot</title>'
  for i in 1 2 3; do
    echo "<item><guid>hot-$i</guid><title>zebrafish news $i</title><pubDate>$(date -u -R)</pubDate></item>"
  done
  echo '</channel></rss>'
} >"$tmp/feeds/hot.xml"
{
  echo '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>cold</title>'
  for i in 1 2; do
    echo "<item><guid>cold-$i</guid><title>platypus notes $i</title><pubDate>$(date -u -R)</pubDate></item>"
  done
  echo '</channel></rss>'
} >"$tmp/feeds/cold.xml"

nport=$(free_port)
cat >"$tmp/nginx.conf" <<NGINX
worker_processes 1;
daemon off;
pid $tmp/nginx.pid;
error_log $tmp/error.log;
events { worker_connections 64; }
http { access_log off; server { listen 127.0.0.1:$nport; root $tmp/feeds; } }
NGINX
nginx -c "$tmp/nginx.conf" -p "$tmp" >"$tmp/nginx.out" 2>&1 &
ngx=$!
for _ in $(seq 50); do
  curl -s -o /dev/null "http://127.0.0.1:$nport/hot.xml" && break
  sleep 0.1
done

# Fetched every 1-2 s (a fetch after the weight moved is a crawl write, which persists it,
# at most once per weight epoch: 1 s here, so the checks below wait a few fetches).
cat >"$tmp/feedplane.toml" <<TOML
[crawler]
min_interval_s = 1
max_interval_s = 2
weight_persist_interval_s = 1
[reflector]
weight_report_interval_s = 1
TOML
export FEEDPLANE_ADMIN_TOKEN=test-admin-token
auth="Authorization: Bearer $FEEDPLANE_ADMIN_TOKEN"
start() {
  : >"$tmp/serve.log"  # now, not in the child: a grep before it truncates would read the last port
  "$bin" serve --config "$tmp/feedplane.toml" --listen 127.0.0.1:0 --data "$tmp/data" \
    --shards 2 --no-pin --resolve "hot.example:$nport:127.0.0.1" \
    --resolve "cold.example:$nport:127.0.0.1" >"$tmp/serve.log" 2>&1 &
  pid=$!
  port=""
  for _ in $(seq 100); do
    port=$(grep -o 'http://127.0.0.1:[0-9]*' "$tmp/serve.log" 2>/dev/null | cut -d: -f3 || true)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || fail "serve exited at start-up"
    sleep 0.1
  done
  [ -n "$port" ] || fail "serve did not print its address"
  for _ in $(seq 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 200 ] && break
    sleep 0.1
  done
  base="http://127.0.0.1:$port"
}
stop() { kill "$pid"; wait "$pid" || true; pid=""; }
add() { curl -s -X POST -H "$auth" -d "{\"url\": \"$1\"}" "$base/api/sources" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
status() { curl -s -H "$auth" "$base/api/sources/$1"; }
metric() {  # the sum over shards of a counter
  local m
  m=$(curl -s "$base/metrics")
  awk -v m="$1" '$1 == m || index($1, m "{") == 1 { s += $2 } END { print s + 0 }' <<<"$m"
}
# weight SOURCE: the status' weight, matches and articles.
weight() {
  status "$1" | python3 -c 'import json,sys; s=json.load(sys.stdin); b=s["weight_basis"]; print(s["weight"], b["matches"], b["articles"], s["fetches"])'
}

start
# ---- N subscriptions to "zebrafish", on both shards (a token's first two bytes are its
# partition; shard = partition mod 2). Made in bulk until each shard has two.
n=0
for round in $(seq 10); do
  : >"$tmp/bulk.jsonl"
  for i in 1 2 3 4; do echo "{\"account\": \"reader-$round-$i\", \"query\": \"zebrafish\"}" >>"$tmp/bulk.jsonl"; done
  curl -s -X POST -H "$auth" --data-binary "@$tmp/bulk.jsonl" "$base/api/subscriptions:bulk" >>"$tmp/bulk.out" ||
    fail "bulk"
  n=$((n + 4))
  python3 - "$tmp/bulk.out" <<'PY' && break
import base64, json, sys
shards = [0, 0]
for line in open(sys.argv[1]):
    a = json.loads(line)
    assert "feed" in a, a
    raw = base64.urlsafe_b64decode(a["feed"].removeprefix("/f/") + "==")
    shards[((raw[0] << 8) | raw[1]) % 2] += 1
sys.exit(0 if min(shards) >= 2 else 1)
PY
done
[ "$(wc -l <"$tmp/bulk.out")" = "$n" ] || fail "bulk answers: $(cat "$tmp/bulk.out")"
echo "crawler_weight: $n subscriptions on both shards"

hot=$(add "http://hot.example:$nport/hot.xml")
cold=$(add "http://cold.example:$nport/cold.xml")
want=$((n + 1))
got=""
for _ in $(seq 150); do
  read -r w m a f <<<"$(weight "$hot")"
  got="$w $m $a"
  python3 -c "import sys; sys.exit(0 if abs($w - $want) < 1e-3 else 1)" && break
  sleep 0.1
done
python3 - "$got" "$n" <<'PY' || fail "hot's weight, matches, articles: $got (want 1 + $n)"
import sys
w, m, a = map(float, sys.argv[1].split())
n = int(sys.argv[2])
assert abs(w - (1 + n)) < 1e-3 and abs(a - 3) < 1e-3 and abs(m - 3 * n) < 1e-2, (w, m, a)
PY
read -r w m a f <<<"$(weight "$cold")"
[ "$f" -ge 1 ] || fail "cold was not fetched: $(status "$cold")"
python3 -c "import sys; sys.exit(0 if $w == 1 and $m == 0 and abs($a - 2) < 1e-3 else 1)" ||
  fail "cold's weight, matches, articles: $w $m $a (want 1 0 2)"
sent=$(metric feedplane_reflector_weight_reports_sent_total)
applied=$(metric feedplane_crawler_weight_updates_total)
[ "$sent" -ge 2 ] || fail "reports sent: $sent (each shard has matches of hot)"
[ "$applied" = "$sent" ] || fail "reports applied $applied, sent $sent"
[ "$(metric feedplane_reflector_weight_reports_dropped_total)" = 0 ] || fail "reports dropped"

# ---- a crash and restart keep the weight: persisted by a crawl write (a fetch after the
# weight arrived, in a weight epoch with no write of it yet: three fetches span two epochs of
# 1 s), and the replayed articles, matched again, are not counted again.
read -r w m a f0 <<<"$(weight "$hot")"
for _ in $(seq 200); do
  read -r w m a f <<<"$(weight "$hot")"
  [ "$f" -gt $((f0 + 3)) ] && break
  sleep 0.1
done
[ "$f" -gt $((f0 + 3)) ] || fail "hot was not fetched again: $(status "$hot")"
sleep 0.5  # that fetch's write is durable
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
pid=""
start
grep -q 'lists from .* partition snapshots' "$tmp/serve.log" &&
  fail "a snapshot was restored: the replay would not re-match the articles"
sleep 2.5  # two report periods: any count of the replay would have arrived
read -r w m a f <<<"$(weight "$hot")"
python3 -c "import sys; sys.exit(0 if abs($w - $want) < 1e-3 and abs($a - 3) < 1e-3 else 1)" ||
  fail "after restart, hot's weight, matches, articles: $w $m $a (want $want, 3 articles)"
[ "$(metric feedplane_reflector_weight_reports_sent_total)" = 0 ] ||
  fail "the replayed log was counted: $(metric feedplane_reflector_weight_reports_sent_total)"
stop

# ---- the weight's writes are rate-limited: with the default weight epoch (300 s), matches
# reported after an article's write are written with the feed's next article, not by each
# 304 in between. Fetched every second (min = max: no write for a moved interval), as in
# bench/crawler_throughput.sh. With weight_persist_interval_s = 0 each report costs a write
# of the record alone: checked to fail so (4 such writes for 4 articles).
sed -i -e '/^weight_persist_interval_s/d' -e 's/^max_interval_s = 2/max_interval_s = 1/' \
  "$tmp/feedplane.toml"
start
sleep 3  # the first fetches write the records once: their intervals clamped to the new bound
w0=$(metric feedplane_crawler_state_writes_total)
a0=$(metric feedplane_crawler_articles_total)
u0=$(metric feedplane_crawler_weight_updates_total)
for i in 4 5 6 7; do
  sed -i "s|</channel>|<item><guid>hot-$i</guid><title>zebrafish news $i</title><pubDate>$(date -u -R)</pubDate></item></channel>|" \
    "$tmp/feeds/hot.xml"
  sleep 3  # a fetch brings it, the reports follow within 1 s, then a 304 every second
done
sleep 1
writes=$(($(metric feedplane_crawler_state_writes_total) - w0))
arts=$(($(metric feedplane_crawler_articles_total) - a0))
updates=$(($(metric feedplane_crawler_weight_updates_total) - u0))
[ "$arts" -ge 4 ] || fail "$arts new articles of hot's 4"
[ "$updates" -ge 3 ] || fail "$updates weight reports applied for $arts articles"
# At most one write of the record alone for the weight in this epoch, two if the run
# crosses into the next.
[ "$writes" -le 2 ] || fail "$writes writes of hot's record alone for $arts articles ($updates weight reports)"
echo "crawler_weight: $arts articles, $updates weight reports, $writes writes of a record alone"
stop
echo "crawler_weight: ok (hot $want, cold 1)"
