#!/usr/bin/env bash
# Politeness across a restart (issue 10): a feed fetched every 5 s ([crawler] min_interval_s =
# max_interval_s = 5) that answers 304 leaves no crawl write (nothing moved), so its record
# still says it was due long ago. After a stop (SIGTERM) and after a crash (kill -9) the
# restarted crawler must not ask it again sooner than the 5 s floor after the last request
# the server saw: shard 0's bound on the last run's fetches (k_alive_key in crawler.cc) holds
# it back. nginx serves the feed (ETag, so the crawler's GETs are conditional) and logs each
# request's time. Checked to fail without the bound (the first request came ~1 s after).
#
# Then the same document again, without validators: a second feed whose server sends no
# ETag and ignores If-Modified-Since (nginx `etag off; if_modified_since off;`) answers every
# conditional GET with a 200 and the same bytes. The crawler recognises it by the
# document's hash ("unchanged") and, as for a 304, writes the feed's record only when
# something a restart needs moved: not once per fetch (the restart above holds it back the
# same way). Checked to fail when every unchanged fetch writes (8 writes for 8 fetches).
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
  [ -f "$tmp/serve.log" ] && cat "$tmp/serve.all.log" "$tmp/serve.log" 2>/dev/null | grep -v '^feedplane: shard' | tail -30 >&2
  [ -f "$tmp/access.log" ] && cat "$tmp/access.log" >&2
  exit 1
}
command -v nginx >/dev/null || fail "nginx is not installed (scripts/setup installs it)"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

mkdir -p "$tmp/feeds"
{
  echo '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>steady</title>'
  echo "<item><guid>steady-1</guid><title>unchanged</title><pubDate>$(date -u -R)</pubDate></item>"
  echo '</channel></rss>'
} >"$tmp/feeds/steady.xml"

nport=$(free_port)
cat >"$tmp/nginx.conf" <<NGINX
worker_processes 1;
daemon off;
pid $tmp/nginx.pid;
error_log $tmp/error.log;
events { worker_connections 64; }
http {
  log_format t '\$msec \$status';
  access_log $tmp/access.log t;
  server {
    listen 127.0.0.1:$nport; root $tmp/feeds;
    location = /same.xml { etag off; if_modified_since off; access_log $tmp/same.log t; }
  }
}
NGINX
nginx -c "$tmp/nginx.conf" -p "$tmp" >"$tmp/nginx.out" 2>&1 &
ngx=$!
for _ in $(seq 50); do
  [ -f "$tmp/nginx.pid" ] && break
  sleep 0.1
done

cat >"$tmp/feedplane.toml" <<TOML
[crawler]
min_interval_s = 5
max_interval_s = 5
TOML
export FEEDPLANE_ADMIN_TOKEN=test-admin-token
auth="Authorization: Bearer $FEEDPLANE_ADMIN_TOKEN"
start() {
  [ -f "$tmp/serve.log" ] && cat "$tmp/serve.log" >>"$tmp/serve.all.log"
  : >"$tmp/serve.log"
  "$bin" serve --config "$tmp/feedplane.toml" --listen 127.0.0.1:0 --data "$tmp/data" \
    --shards 2 --no-pin --resolve "steady.example:$nport:127.0.0.1" >"$tmp/serve.log" 2>&1 &
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
requests() { wc -l <"$tmp/access.log"; }
wait_requests() {  # wait_requests N SECONDS: until the log holds N requests
  for _ in $(seq $(($2 * 10))); do
    [ "$(requests)" -ge "$1" ] && return 0
    sleep 0.1
  done
  fail "$(requests) requests after $2 s, wanted $1"
}
# check_gap WHAT: the first request after the restart against the last before it.
check_gap() {
  python3 - "$tmp/access.log" "$1" "$2" <<'PY'
import sys
lines = [l.split() for l in open(sys.argv[1])]
before = int(sys.argv[3])
last, first = float(lines[before - 1][0]), float(lines[before][0])
gap = first - last
# The floor is 5 s; a regular fetch may come 10% early (the spread), a restart's never.
if gap < 4.5:
    print(f"FAIL: after the {sys.argv[2]} the feed was asked again {gap:.2f} s after the last request (floor 5 s)")
    sys.exit(1)
print(f"crawler_restart_gap: after the {sys.argv[2]}, {gap:.2f} s since the last request (floor 5 s); last status before it {lines[before - 1][1]}")
PY
}

start
: >"$tmp/access.log"
curl -s -X POST -H "$auth" -d "{\"url\": \"http://steady.example:$nport/steady.xml\"}" "$base/api/sources" |
  grep -q '"id"' || fail "add source"
# A 200, then 304s every 5 s: the 304s write nothing.
wait_requests 3 30
sleep 1.5
kill "$pid"
wait "$pid" || true
pid=""
n=$(requests)
tail -1 "$tmp/access.log" | grep -q ' 304$' || fail "the last request before the stop was not a 304"
start
wait_requests $((n + 1)) 40
check_gap stop "$n" || fail "gap after a stop"

# The same after a crash; the bound is then the last beat's (at most 20 s ahead).
wait_requests $((n + 3)) 30
sleep 1.5
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=""
n=$(requests)
start
wait_requests $((n + 1)) 60
check_gap crash "$n" || fail "gap after a crash"
kill "$pid"
wait "$pid" || true
pid=""

# ---- the same document again, fetched every second.
{
  echo '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>same</title>'
  echo "<item><guid>same-1</guid><title>the same</title><pubDate>$(date -u -R)</pubDate></item>"
  echo '</channel></rss>'
} >"$tmp/feeds/same.xml"
sed -i -e 's/^min_interval_s = 5/min_interval_s = 1/' -e 's/^max_interval_s = 5/max_interval_s = 1/' \
  "$tmp/feedplane.toml"
start
metric() {  # metric NAME [LABELS]: its value in /metrics (0 when absent)
  curl -s "$base/metrics" | awk -v n="$1${2:-}" '$1 == n { v = $2 } END { print v + 0 }'
}
curl -s -X POST -H "$auth" -d "{\"url\": \"http://steady.example:$nport/same.xml\"}" "$base/api/sources" |
  grep -q '"id"' || fail "add the second source"
unchanged() { metric feedplane_crawler_fetches_total '{result="unchanged"}'; }
# Its first fetch parses the document and writes the record; steady's first fetch here
# writes its record once (its interval clamped to the new 1 s bound).
for _ in $(seq 100); do
  [ "$(unchanged)" -ge 1 ] && break
  sleep 0.1
done
[ "$(unchanged)" -ge 1 ] || fail "no unchanged fetch after 10 s"
sleep 2
writes0=$(metric feedplane_crawler_state_writes_total)
unchanged0=$(unchanged)
for _ in $(seq 200); do
  [ "$(unchanged)" -ge $((unchanged0 + 8)) ] && break
  sleep 0.1
done
writes=$(($(metric feedplane_crawler_state_writes_total) - writes0))
n=$(($(unchanged) - unchanged0))
[ "$n" -ge 8 ] || fail "$n unchanged fetches in 20 s, wanted 8"
grep -v ' 200$' "$tmp/same.log" | grep . >/dev/null && fail "nginx answered same.xml with something else than 200"
[ "$writes" -le 1 ] || fail "$writes writes of a record alone for $n unchanged fetches"
echo "crawler_restart_gap: $n unchanged fetches (200, the same document), $writes writes of a record alone"
kill "$pid"
wait "$pid" || true
pid=""
echo "crawler_restart_gap: passed"
